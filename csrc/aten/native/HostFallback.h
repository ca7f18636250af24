#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torchneuron {

// The boxed kernel behind every ATen op that has no neuron-specific kernel.
void neuronFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

struct OpEntry;
// Whether an unboxed kernel may run op on the host itself: no policy refusal and no lowered-eager executor
// (otherwise it hands the call to neuronFallback). Also prepares the entry's schema facts.
bool directHostPath(const c10::OperatorHandle& op, OpEntry& entry);

} // namespace torchneuron
