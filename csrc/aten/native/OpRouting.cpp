#include "aten/native/OpRouting.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <utility>

#include "aten/native/BoxedHostKernel.h"
#include "aten/native/NestedHostKernel.h"

namespace torchneuron {

namespace {
torch::CppFunction boxedHostKernel() { return torch::CppFunction::makeFromBoxedFunction<&boxedOpKernel>(); }

// Ops whose only kernel is generic but works on CPU tensors alone, so it must run on host aliases:
// conj_physical_ calls a CPU DispatchStub itself (no kernel for neuron there), and mode.values refuses any
// device but CPU/CUDA/XPU before it dispatches. Both have autograd kernels of their own, so a neuron kernel
// below them loses nothing.
void routeHostOnlyGenerics(torch::Library& lib, c10::Dispatcher& dispatcher) {
  using Name = std::pair<std::string, std::string>;  // (name, overload)
  for (const auto& [name, overload] : {Name{"conj_physical_", ""}, Name{"mode", "values"}}) {
    if (!dispatcher.findOp(c10::OperatorName("aten::" + name, overload))) continue;
    const std::string qualified = overload.empty() ? name : name + "." + overload;
    lib.impl(qualified.c_str(), boxedHostKernel());
  }
}

// The generic in-place form of such an op (addr_ = addr_out(self, self, ...)) must run its generic kernel
// on the host too: there self and out are one C++ reference, which is how the CPU kernel tells in-place
// from out= (a 0-dim self is an error in place, broadcast otherwise).
void routeGenericInplace(torch::Library& lib, c10::Dispatcher& dispatcher, const std::string& functional) {
  auto op = dispatcher.findOp(c10::OperatorName(functional + "_", ""));
  if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
      !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd)) {
    return;
  }
  lib.impl((functional.substr(6) + "_").c_str(), boxedHostKernel());
}
} // namespace

// Structured ops (add, mul, sum, ...) would otherwise reach PrivateUse1 through their
// CompositeExplicitAutogradNonFunctional wrapper, which dispatches empty() and then the out= overload: two
// dispatches and an extra alias per call. Sending the functional and in-place overloads straight to the host
// path lets the host kernel allocate its result in device memory itself, which halves small-op latency.
void routeOpsToBoxedHostKernel(torch::Library& lib, const std::unordered_set<std::string>& unboxed) {
  auto& dispatcher = c10::Dispatcher::singleton();
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
    lib.impl(qualified.c_str(), boxedHostKernel());
    if (name.overload_name.empty()) routeGenericInplace(lib, dispatcher, name.name);
  }
  routeHostOnlyGenerics(lib, dispatcher);
}

// Ops with a nested-tensor kernel *and* a composite one (matmul, linear, ...) would otherwise take the composite
// for NestedTensorPrivateUse1 (it outranks a backend fallback) and fail on the nested layout; registering the
// host path for them directly gives them the nested kernel the CPU uses.
void routeNestedOps(torch::Library& lib) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const auto& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    auto op = dispatcher.findOp(name);
    if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::NestedTensorCPU)) continue;
    const std::string qualified =
        name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
    lib.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&boxedNestedOpKernel>());
  }
}

} // namespace torchneuron
