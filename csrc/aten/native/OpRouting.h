#pragma once
// Which ATen ops get a neuron kernel registered by name on top of the backend fallbacks, worked out at static
// init from the kernels PyTorch's dispatcher holds, so that no hand-kept list falls behind PyTorch. The
// registration files (aten/RegisterBoxedKernel.cpp, aten/RegisterNested.cpp) call these.
#include <torch/library.h>

#include <string>
#include <unordered_set>

namespace torchneuron {

// On `lib` (aten, PrivateUse1): boxedOpKernel for every aten op with a CPU kernel that would otherwise reach
// neuron through a generic composite kernel, except the ops in `unboxed` ("aten::add.Tensor", registered with
// an unboxed host kernel already), and for the few generic ops that work on CPU tensors only.
void routeOpsToBoxedHostKernel(torch::Library& lib, const std::unordered_set<std::string>& unboxed);

// On `lib` (aten, NestedTensorPrivateUse1): boxedNestedOpKernel for every aten op with a NestedTensorCPU kernel.
void routeNestedOps(torch::Library& lib);

} // namespace torchneuron
