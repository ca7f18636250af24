// Registration only: every op on a neuron nested tensor (NestedTensorPrivateUse1) runs PyTorch's NestedTensorCPU
// kernel on host aliases of it (csrc/aten/native/NestedHostKernel.cpp).
#include <torch/library.h>

#include "aten/native/NestedHostKernel.h"
#include "aten/native/OpRouting.h"

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedNestedOpKernel>());
}

namespace {
// The ops native/OpRouting.h sends to the nested kernel directly. Kept for the process: registrations die with
// the Library.
torch::Library* g_nested = [] {
  auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::NestedTensorPrivateUse1, __FILE__,
                                 __LINE__);
  torchneuron::routeNestedOps(*lib);
  return lib;
}();
} // namespace
