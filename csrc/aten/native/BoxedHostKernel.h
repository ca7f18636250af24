#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torchneuron {

// The boxed kernel behind every ATen op that has no neuron-specific kernel of its own (registered as what
// PyTorch calls the PrivateUse1 "backend fallback", aten/RegisterBoxedKernel.cpp). It runs every such op, with
// or without a StableHLO lowering (torchneuron.fallback_ops() lists the ops without one).
// It counts the op, asks the op policy once, applies the float64 rule, then runs the op on the lowered-eager
// executor when one is installed, else as its host kernel on the device buffers.
void boxedOpKernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

struct OpEntry;
// Whether an unboxed kernel may run op on the host itself: no policy refusal and no lowered-eager executor
// (otherwise it hands the call to boxedOpKernel). Also prepares the entry's schema facts.
bool directHostPath(const c10::OperatorHandle& op, OpEntry& entry);

} // namespace torchneuron
