// Registration only: every other ATen op on neuron goes through the boxed host-execution path.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>
#include <utility>

#include "aten/RegisterHostKernels.h"
#include "aten/native/HostFallback.h"

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
}

namespace {
// Structured ops (add, mul, sum, ...) would otherwise reach PrivateUse1 through their
// CompositeExplicitAutogradNonFunctional wrapper, which dispatches empty() and then the out= overload: two
// dispatches and an extra alias per call. Sending the functional and in-place overloads straight to the host
// path lets the host kernel allocate its result in device memory itself, which halves small-op latency.
struct DirectHostPath {
  DirectHostPath() : lib(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__) {
    auto& dispatcher = c10::Dispatcher::singleton();
    const auto unboxed = torchneuron::registerHostKernels(lib);
    for (const auto& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      if (unboxed.count(name.name + "." + name.overload_name)) continue;
      auto op = dispatcher.findOp(name);
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) continue;
      // Also the few ops with both a CPU kernel and a generic CompositeExplicitAutograd one (native_layer_norm,
      // native_group_norm, addr, _stack, all/any.dims, linalg__powsum): the generic one would run as a chain of
      // small ops, slower and numerically unlike the CPU kernel a user compares against.
      if (!op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) &&
          !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd)) {
        continue;
      }
      std::string qualified = name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
      lib.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
      if (name.overload_name.empty()) routeGenericInplace(dispatcher, name.name);
    }
    routeHostOnlyGenerics(dispatcher);
  }
  // Ops whose only kernel is generic but works on CPU tensors alone, so it must run on host aliases:
  // conj_physical_ calls a CPU DispatchStub itself (no kernel for neuron there), and mode.values refuses any
  // device but CPU/CUDA/XPU before it dispatches. Both have autograd kernels of their own, so a neuron kernel
  // below them loses nothing.
  void routeHostOnlyGenerics(c10::Dispatcher& dispatcher) {
    using Name = std::pair<std::string, std::string>;  // (name, overload)
    for (const auto& [name, overload] : {Name{"conj_physical_", ""}, Name{"mode", "values"}}) {
      if (!dispatcher.findOp(c10::OperatorName("aten::" + name, overload))) continue;
      const std::string qualified = overload.empty() ? name : name + "." + overload;
      lib.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
    }
  }
  // The generic in-place form of such an op (addr_ = addr_out(self, self, ...)) must run its generic kernel
  // on the host too: there self and out are one C++ reference, which is how the CPU kernel tells in-place
  // from out= (a 0-dim self is an error in place, broadcast otherwise).
  void routeGenericInplace(c10::Dispatcher& dispatcher, const std::string& functional) {
    auto op = dispatcher.findOp(c10::OperatorName(functional + "_", ""));
    if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd)) {
      return;
    }
    lib.impl((functional.substr(6) + "_").c_str(),
             torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
  }

  torch::Library lib;
};
DirectHostPath* g_direct = new DirectHostPath();  // kept for the process: registrations die with the Library
} // namespace
