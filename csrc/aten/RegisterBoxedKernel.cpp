// Registration only: every ATen op on neuron without a kernel of its own runs the boxed host kernel
// (native/BoxedHostKernel.h). PyTorch calls a kernel registered for every op of a key a "backend fallback".
#include <torch/library.h>

#include "aten/RegisterHostKernels.h"
#include "aten/native/BoxedHostKernel.h"
#include "aten/native/OpRouting.h"

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
}

namespace {
// The hottest ops by name (unboxed host kernels), then the ops native/OpRouting.h sends to the boxed kernel
// directly. Kept for the process: registrations die with the Library.
torch::Library* g_routed = [] {
  auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  torchneuron::routeOpsToBoxedHostKernel(*lib, torchneuron::registerHostKernels(*lib));
  return lib;
}();
} // namespace
