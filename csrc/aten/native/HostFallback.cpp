// Every ATen op without a neuron-specific kernel runs here. On the simulator the op's host (CPU) kernel
// executes directly on the device buffers: inputs are zero-copy host aliases of the neuron tensors, outputs
// are allocated in device memory while the kernel runs (CaptureOutputsOnDevice), and the op is ordered on the
// current stream. Nothing is copied to the host and back.
#include "aten/native/HostFallback.h"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <sstream>

#include "allocator/CachingAllocator.h"
#include "aten/native/Fp64Emulation.h"
#include "aten/native/HostAlias.h"
#include "aten/native/HostOutputAllocator.h"
#include "aten/native/HostThreads.h"
#include "aten/native/OpRegistry.h"
#include "device/Generator.h"
#include "device/Streams.h"

namespace torchneuron {

namespace {
thread_local bool t_in_executor = false;

struct AliasPair {
  c10::TensorImpl* alias_impl;
  c10::StorageImpl* alias_storage;
  const void* alias_data;  // the bytes the alias pointed at before the kernel ran
  at::Tensor original;
  bool written;
  at::Tensor alias;
};

void analyse(OpEntry& entry, const c10::FunctionSchema& schema) {
  std::call_once(entry.analysed, [&] {
    for (const auto& arg : schema.arguments()) {
      entry.writes.push_back(arg.alias_info() != nullptr && arg.alias_info()->isWrite());
      const auto& type = arg.type();
      bool gen = false, index_list = false;
      if (auto opt = type->castRaw<c10::OptionalType>()) {
        gen = opt->getElementType()->kind() == c10::TypeKind::GeneratorType;
      } else if (auto list = type->castRaw<c10::ListType>()) {
        index_list = list->getElementType()->kind() == c10::TypeKind::OptionalType;
      }
      entry.is_generator.push_back(gen);
      entry.is_index_list.push_back(index_list);
    }
  });
}

std::string describeInputs(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  std::ostringstream out;
  bool first = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isTensor()) continue;
    const auto& t = args[i].toTensor();
    if (!t.defined()) continue;
    out << (first ? "" : ", ") << schema.arguments()[i].name() << ": " << t.device() << " " << t.scalar_type()
        << " " << t.sizes();
    first = false;
  }
  return first ? "no tensor inputs" : out.str();
}

[[noreturn]] void refuse(const OpEntry& entry, const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  TORCH_CHECK(false, *entry.refusal, " (inputs: ", describeInputs(schema, args), ")");
}

void checkPolicy(OpEntry& entry) {
  if (auto policy = opPolicy()) {
    auto refusal = policy(entry.name);
    if (refusal) entry.refusal = std::move(refusal);
  }
  entry.policy_checked.store(true, std::memory_order_release);
}

// Picks the op's device and checks every tensor is on it (or is a host scalar), as CUDA kernels do.
class DeviceCheck {
 public:
  DeviceCheck(const std::string& op_name) : op_name_(op_name) {}

  void see(const at::Tensor& t, const std::string& arg, bool host_allowed) {
    if (!t.defined()) return;
    if (t.device().is_privateuseone()) {
      if (device_ < 0) {
        device_ = t.device().index();
        first_arg_ = arg;
      } else {
        TORCH_CHECK(t.device().index() == device_, "Expected all tensors to be on the same device, but found at "
                    "least two devices, neuron:", static_cast<int>(device_), " and ", t.device(), "! (", op_name_, ": argument '",
                    first_arg_, "' is on neuron:", static_cast<int>(device_), ", argument '", arg, "' on ", t.device(),
                    "; move them to one device with .to())");
      }
    } else if (!host_allowed && t.dim() > 0) {
      host_arg_ = arg;
      host_device_ = t.device();
      host_sizes_ = t.sizes().vec();
    }
  }

  c10::DeviceIndex finish() {
    if (device_ < 0) device_ = currentDevice();
    TORCH_CHECK(host_arg_.empty(), "Expected all tensors to be on the same device, but found at least two "
                "devices, neuron:", static_cast<int>(device_), " and ", host_device_, "! (", op_name_, ": argument '", host_arg_,
                "' with shape ", c10::IntArrayRef(host_sizes_), " is on ", host_device_,
                "; move it with .to('neuron') — only 0-dim host tensors may be mixed with neuron tensors)");
    return device_;
  }

 private:
  const std::string& op_name_;
  c10::DeviceIndex device_ = -1;
  std::string first_arg_;
  std::string host_arg_;
  c10::Device host_device_{c10::DeviceType::CPU};
  std::vector<int64_t> host_sizes_;
};

at::Tensor toHost(const at::Tensor& t, bool written, c10::SmallVector<AliasPair, 8>& pairs) {
  // One tensor passed twice (x.add_(x), out=self) stays one host tensor, so the kernel sees the aliasing
  // (TensorIterator's in-place shape check, overlap checks) exactly as on the CPU.
  for (auto& p : pairs) {
    if (p.original.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
      p.written = p.written || written;
      return p.alias;
    }
  }
  at::Tensor alias = hostAlias(t);
  pairs.push_back({alias.unsafeGetTensorImpl(), alias.storage().unsafeGetStorageImpl(), alias.storage().data(), t,
                   written, alias});
  return alias;
}

// Brings one result of the host kernel back as a neuron tensor.
at::Tensor toDevice(const at::Tensor& out, c10::DeviceIndex device, const c10::SmallVector<AliasPair, 8>& pairs) {
  if (!out.defined() || out.device().is_privateuseone()) return out;
  c10::TensorImpl* impl = out.unsafeGetTensorImpl();
  c10::StorageImpl* storage = out.has_storage() ? out.storage().unsafeGetStorageImpl() : nullptr;
  for (const auto& p : pairs) {
    if (p.alias_impl == impl) return p.original;  // in-place / out=: the caller's own tensor
  }
  for (const auto& p : pairs) {
    if (p.alias_storage == storage) {  // a view of an input
      return deviceTensorOver(p.original.storage(), out, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1));
    }
  }
  return fromHostResult(out, device);  // a fresh result, allocated in device memory during the kernel
}

// out= kernels may resize their outputs: mirror the new geometry (and grown storage) on the neuron tensor.
void syncWrittenArgument(const AliasPair& p, c10::DeviceIndex device) {
  c10::TensorImpl* alias = p.alias_impl;
  c10::TensorImpl* original = p.original.unsafeGetTensorImpl();
  if (p.alias_storage->data() != p.alias_data) {
    c10::DataPtr grown = p.alias_storage->set_data_ptr(c10::DataPtr());
    retagAsDevice(grown, device);
    auto* target = p.original.storage().unsafeGetStorageImpl();
    size_t nbytes = p.alias_storage->nbytes();
    target->set_data_ptr_noswap(std::move(grown));
    target->set_nbytes(nbytes);
  }
  if (alias->sizes() != original->sizes() || alias->strides() != original->strides() ||
      alias->storage_offset() != original->storage_offset()) {
    original->set_sizes_and_strides(alias->sizes(), alias->strides(), alias->storage_offset());
  }
}

void runOnHost(const c10::OperatorHandle& op, OpEntry& entry, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;

  DeviceCheck check(entry.name);
  for (size_t i = 0; i < nargs; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    const std::string& arg = schema.arguments()[i].name();
    if (v.isTensor()) {
      check.see(v.toTensor(), arg, false);
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) check.see(t, arg, false);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) check.see(e.toTensor(), arg, entry.is_index_list[i]);
      }
    }
  }
  const c10::DeviceIndex device = check.finish();

  c10::SmallVector<AliasPair, 8> pairs;
  for (size_t i = 0; i < nargs; ++i) {
    c10::IValue& v = (*stack)[base + i];
    const bool written = entry.writes[i];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined() && t.device().is_privateuseone()) v = toHost(t, written, pairs);
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      c10::List<at::Tensor> host;
      host.reserve(list.size());
      for (const at::Tensor& t : list) {
        host.push_back(t.defined() && t.device().is_privateuseone() ? toHost(t, written, pairs) : t);
      }
      v = std::move(host);
    } else if (v.isList() && entry.is_index_list[i]) {
      c10::List<std::optional<at::Tensor>> host;
      for (const c10::IValue& e : v.toListRef()) {
        // Python indexing (x[:, i]) passes undefined tensors, not None, for the sliced dims.
        const bool defined = e.isTensor() && e.toTensor().defined();
        if (defined && e.toTensor().device().is_privateuseone()) {
          host.push_back(toHost(e.toTensor(), written, pairs));
        } else {
          host.push_back(defined ? std::optional<at::Tensor>(e.toTensor()) : std::nullopt);
        }
      }
      v = std::move(host);
    } else if (v.isDevice() && v.toDevice().is_privateuseone()) {
      v = c10::IValue(c10::Device(c10::DeviceType::CPU));
    } else if (entry.is_generator[i]) {
      // Random ops draw from the neuron device's generator, never from the CPU's.
      if (v.isNone()) {
        v = c10::IValue(static_cast<NeuronGenerator*>(defaultGenerator(device).unsafeGetGeneratorImpl())->engine());
      } else if (v.isGenerator() && v.toGenerator().device().is_privateuseone()) {
        v = c10::IValue(static_cast<NeuronGenerator*>(v.toGenerator().unsafeGetGeneratorImpl())->engine());
      }
    }
  }

  prepareHostKernelThread();
  const c10::Stream stream = currentStream(device);  // looked up once: this is the per-op path
  auto queue = queueOf(stream);
  if (!queue->idle()) queue->drain();  // stream order: earlier async work on this stream finishes first
  {
    CaptureOutputsOnDevice capture(device, static_cast<int>(stream.id()));
    try {
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    } catch (c10::Error& e) {
      e.add_context(c10::str("while running ", entry.name, " on neuron:", static_cast<int>(device),
                             " (host kernel on the simulator)"));
      throw;
    }
  }

  for (const auto& p : pairs) {
    if (p.written) syncWrittenArgument(p, device);
  }
  const size_t nrets = schema.returns().size();
  for (size_t i = stack->size() - nrets; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = toDevice(v.toTensor(), device, pairs);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : v.toTensorList()) out.push_back(toDevice(t, device, pairs));
      v = std::move(out);
    }
  }
}
} // namespace

void neuronFallback(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  OpEntry& entry = opEntry(op);
  entry.count.fetch_add(1, std::memory_order_relaxed);
  analyse(entry, op.schema());
  if (C10_UNLIKELY(!entry.policy_checked.load(std::memory_order_acquire))) checkPolicy(entry);
  if (C10_UNLIKELY(entry.refusal.has_value())) {
    refuse(entry, op.schema(), torch::jit::last(*stack, op.schema().arguments().size()));
  }
  if (auto executor = eagerExecutor(); executor != nullptr && !t_in_executor) {
    t_in_executor = true;
    bool handled = false;
    try {
      handled = executor(op, stack);
    } catch (...) {
      t_in_executor = false;
      throw;
    }
    t_in_executor = false;
    if (handled) return;
  }
  if (emulateFp64(op, stack, [&](torch::jit::Stack* s) { runOnHost(op, entry, s); })) return;
  runOnHost(op, entry, stack);
}

} // namespace torchneuron
