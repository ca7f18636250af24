// See NestedHostKernel.h. A nested tensor's data is one flat buffer plus CPU metadata (per-component sizes,
// strides and offsets); the host alias shares both, so the NestedTensorCPU kernel reads and writes the device
// buffer directly. The metadata of results is copied to host memory: it is a CPU tensor on every backend
// (CUDA's nested tensors keep it on the host too), not device data.
#include "aten/native/NestedHostKernel.h"

#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>
#include <c10/util/Exception.h>

#include <deque>
#include <utility>
#include <vector>

#include "aten/native/BoxedHostKernel.h"
#include "aten/native/HostCall.h"
#include "aten/native/HostResults.h"
#include "aten/native/OpRegistry.h"
#include "device/Generator.h"

namespace torchneuron {

namespace {
using at::native::get_nested_tensor_impl;
using at::native::NestedTensorImpl;

// The nested half of one host call; HostCall does the dense buffers.
class NestedAliases {
 public:
  explicit NestedAliases(HostCall& call) : call_(call) {}

  at::Tensor toHost(const at::Tensor& t, bool written) {
    if (!t.defined() || !t.device().is_privateuseone()) return t;
    if (!t.is_nested()) return call_.toHost(t, written);
    for (const auto& [alias, original] : nested_) {
      if (original->unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) return alias;
    }
    const NestedTensorImpl* impl = get_nested_tensor_impl(t);
    buffers_.push_back(impl->get_unsafe_storage_as_tensor());  // HostCall refers to it by pointer: keep it
    at::Tensor host_buffer = call_.toHost(buffers_.back(), written);
    at::Tensor alias = at::detail::make_tensor<NestedTensorImpl>(
        host_buffer, impl->get_nested_sizes(), impl->get_nested_strides(), impl->get_storage_offsets());
    for (const at::Tensor* meta :
         {&impl->get_nested_sizes(), &impl->get_nested_strides(), &impl->get_storage_offsets()}) {
      metadata_.push_back(meta->unsafeGetTensorImpl());
    }
    nested_.emplace_back(alias, &t);
    return alias;
  }

  at::Tensor toDevice(at::Tensor out) const {
    if (!out.defined() || out.device().is_privateuseone()) return out;
    for (const c10::TensorImpl* meta : metadata_) {
      if (out.unsafeGetTensorImpl() == meta) return out;  // an input's metadata (_nested_tensor_size): host data
    }
    if (!out.is_nested()) return call_.toDevice(std::move(out));
    for (const auto& [alias, original] : nested_) {
      if (alias.unsafeGetTensorImpl() == out.unsafeGetTensorImpl()) return *original;  // in place: the caller's
    }
    const NestedTensorImpl* impl = get_nested_tensor_impl(out);
    // A view of an input's buffer, or fresh device memory the kernel allocated while capturing.
    at::Tensor buffer = call_.toDevice(impl->get_unsafe_storage_as_tensor());
    return at::detail::make_tensor<NestedTensorImpl>(buffer, impl->get_nested_sizes().clone(),
                                                     impl->get_nested_strides().clone(),
                                                     impl->get_storage_offsets().clone());
  }

 private:
  HostCall& call_;
  std::deque<at::Tensor> buffers_;  // deque: growing it never moves the tensors HostCall points at
  std::vector<std::pair<at::Tensor, const at::Tensor*>> nested_;  // host alias -> the caller's nested tensor
  std::vector<const c10::TensorImpl*> metadata_;
};
bool takesDevice(c10::ArrayRef<c10::IValue> args) {
  for (const c10::IValue& v : args) {
    if (v.isDevice()) return true;
  }
  return false;
}

// Nested ops take their shapes as CPU int64 tensors on every backend (_nested_from_padded's
// cpu_nested_shape_example, _nested_view_from_buffer's sizes): those stay on the host.
bool isHostMetadata(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && !t.is_nested() && t.scalar_type() == at::kLong;
}
} // namespace

void boxedNestedOpKernel(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;
  TORCH_CHECK_NOT_IMPLEMENTED(
      op.hasComputedKernelForDispatchKey(c10::DispatchKey::NestedTensorCPU), schema.operator_name(),
      " is not supported for nested tensors on the neuron device: PyTorch has no nested-tensor kernel for it on "
      "the CPU either, and neuron runs the CPU's. Convert with to_padded_tensor() or unbind() first, or use "
      "layout=torch.jagged.");
  OpEntry& entry = opEntry(op);
  countExecution(entry);
  directHostPath(op, entry);  // schema facts and the op policy
  TORCH_CHECK(!entry.refusal.has_value(), *entry.refusal);

  // Moving a nested tensor between devices (.to(), .cpu(), copy_) and creating one on a given device
  // (empty_like(..., device=)) run the NestedTensorCPU kernel on the real tensors: those kernels are generic
  // (a dense copy or allocation of the flat buffer, which takes the device's own path) and must put their
  // result where the device argument says, not in device memory captured for a host kernel.
  if (schema.operator_name().name == "aten::copy_" || takesDevice(torch::jit::last(*stack, nargs))) {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU), stack);
    return;
  }
  DeviceCheck check(entry.name);
  for (size_t i = 0; i < nargs; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    const std::string& arg = schema.arguments()[i].name();
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      TORCH_CHECK(!t.defined() || !t.is_nested() || t.device().is_privateuseone(), "Expected all tensors to be on ",
                  "the same device, but ", entry.name, " got a nested tensor on ", t.device(), " (argument '", arg,
                  "') next to neuron tensors; move it with .to('neuron')");
      check.see(t, arg, isHostMetadata(t));
    } else if (v.isTensorList()) {
      for (const c10::IValue& e : v.toListRef()) check.see(e.toTensor(), arg, false);
    }
  }
  HostCall call(entry, check.finish());
  NestedAliases nested(call);

  torch::jit::Stack host;
  host.reserve(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    const bool written = entry.writes[i];
    if (v.isTensor()) {
      host.emplace_back(nested.toHost(v.toTensor(), written));
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const c10::IValue& e : v.toListRef()) list.push_back(nested.toHost(e.toTensor(), written));
      host.emplace_back(std::move(list));
    } else if (entry.is_generator[i] && v.isNone()) {
      // Random nested ops (dropout) draw from the neuron device's generator, as dense ones do.
      auto* generator = static_cast<NeuronGenerator*>(defaultGenerator(call.device()).unsafeGetGeneratorImpl());
      host.emplace_back(generator->engine());
    } else {
      host.push_back(v);
    }
  }

  call.run([&] { op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU), &host); });

  returnResults(host, stack, nargs, [&](at::Tensor t) { return nested.toDevice(std::move(t)); });
}

} // namespace torchneuron
