// Registration only: every op on a neuron nested tensor (NestedTensorPrivateUse1) runs PyTorch's NestedTensorCPU
// kernel on host aliases of it (csrc/aten/native/NestedHostFallback.cpp).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>

#include "aten/native/NestedHostFallback.h"

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torchneuron::nestedFallback>());
}

namespace {
// Ops with a nested-tensor kernel *and* a composite one (matmul, linear, ...) would otherwise take the composite
// for NestedTensorPrivateUse1 (it outranks a fallback) and fail on the nested layout; registering the host
// path for them directly gives them the nested kernel the CPU uses.
struct NestedKernels {
  NestedKernels() : lib(torch::Library::IMPL, "aten", c10::DispatchKey::NestedTensorPrivateUse1, __FILE__, __LINE__) {
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const auto& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      auto op = dispatcher.findOp(name);
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::NestedTensorCPU)) continue;
      const std::string qualified =
          name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
      lib.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&torchneuron::nestedFallback>());
    }
  }
  torch::Library lib;
};
NestedKernels* g_nested = new NestedKernels();  // kept for the process: registrations die with the Library
} // namespace
