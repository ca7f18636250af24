#pragma once
#include <torch/library.h>

#include <string>
#include <unordered_set>

namespace torchneuron {

// Registers the unboxed host kernels on `lib` (aten, PrivateUse1); returns their names ("aten::add.Tensor")
// so that the boxed routing (native/OpRouting.h) leaves them alone.
std::unordered_set<std::string> registerHostKernels(torch::Library& lib);

} // namespace torchneuron
