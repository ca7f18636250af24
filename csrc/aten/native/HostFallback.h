#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torchneuron {

// The boxed kernel behind every ATen op that has no neuron-specific kernel.
void neuronFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

} // namespace torchneuron
