#pragma once
// Nested tensors (torch.nested, strided layout) on neuron: NestedTensorPrivateUse1. A neuron nested tensor is a
// NestedTensorImpl over device memory; every op on it runs PyTorch's NestedTensorCPU kernel on a host alias
// of it (same buffer bytes, same size/stride/offset metadata), exactly as dense ops run the CPU's kernels on
// host aliases (BoxedHostKernel.h): zero-copy, in stream order, results allocated in device memory. So nested
// tensors work on neuron wherever they work on the CPU, the TransformerEncoder fast path included.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torchneuron {

// The boxed kernel of every op on a neuron nested tensor (registered as PyTorch's NestedTensorPrivateUse1
// backend fallback, aten/RegisterNested.cpp, and for the ops aten/native/OpRouting.h routes).
void boxedNestedOpKernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

} // namespace torchneuron
