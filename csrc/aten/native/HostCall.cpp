#include "aten/native/HostCall.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include "aten/native/HostAlias.h"
#include "aten/native/HostStaging.h"
#include "aten/native/HostThreads.h"
#include "aten/native/Minimal.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron {

void DeviceCheck::see(const at::Tensor& t, const std::string& arg, bool host_allowed) {
  if (!t.defined()) return;
  if (t.device().is_privateuseone()) {
    if (device_ < 0) {
      device_ = t.device().index();
      first_arg_ = &arg;
    } else {
      TORCH_CHECK(t.device().index() == device_, "Expected all tensors to be on the same device, but found at "
                  "least two devices, neuron:", static_cast<int>(device_), " and ", t.device(), "! (", op_name_,
                  ": argument '", *first_arg_, "' is on neuron:", static_cast<int>(device_), ", argument '", arg,
                  "' on ", t.device(), "; move them to one device with .to())");
    }
  } else if (!host_allowed && t.dim() > 0) {
    host_arg_ = &arg;
    host_device_ = t.device();
    host_sizes_.assign(t.sizes().begin(), t.sizes().end());
  }
}

c10::DeviceIndex DeviceCheck::finish() {
  if (device_ < 0) device_ = currentDevice();
  TORCH_CHECK(host_arg_ == nullptr, "Expected all tensors to be on the same device, but found at least two "
              "devices, neuron:", static_cast<int>(device_), " and ", host_device_, "! (", op_name_, ": argument '",
              (host_arg_ ? *host_arg_ : std::string()), "' with shape ", c10::IntArrayRef(host_sizes_), " is on ",
              host_device_, "; move it with .to('neuron') — only 0-dim host tensors may be mixed with neuron tensors)");
  return device_;
}

// runtime() first: which memory model applies is known once the runtime exists (an op may be the first use).
HostCall::HostCall(OpEntry& entry, c10::DeviceIndex device)
    : entry_(entry), thread_(hostThreadState()), device_(device), staged_((runtime(), !deviceMemoryIsHostMemory())) {}

at::Tensor HostCall::stage(const at::Tensor& t, bool written) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  for (auto& s : storages_) {
    if (s.device_storage == storage) {
      s.written = s.written || written;
      return hostTensorOver(s.host, t);
    }
  }
  storages_.push_back({storage, &t, readStorage(t.storage(), *currentQueue(device_)), written});
  return hostTensorOver(storages_.back().host, t);
}

size_t HostCall::toHostIndex(const at::Tensor& t, bool written) {
  // One tensor passed twice (x.add_(x), out=self) stays one host tensor, so the kernel sees the aliasing
  // (TensorIterator's in-place shape check, overlap checks) exactly as on the CPU.
  const c10::StorageImpl* device_storage = t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr;
  const Pair* same_storage = nullptr;
  for (size_t i = 0; i < pairs_.size(); ++i) {
    Pair& p = pairs_[i];
    if (p.original->unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
      p.written = p.written || written;
      if (staged_ && written) {
        for (auto& s : storages_) s.written = s.written || s.device_storage == p.original->storage().unsafeGetStorageImpl();
      }
      return i;
    }
    if (same_storage == nullptr && device_storage != nullptr && p.original->has_storage() &&
        p.original->storage().unsafeGetStorageImpl() == device_storage) {
      same_storage = &p;
    }
  }
  at::Tensor owned;
  CachedAlias* lent = nullptr;
  if (staged_) {
    owned = stage(t, written);
  } else if (same_storage != nullptr) {
    // Views of one neuron storage (x and x.t(), out=x[1:]) become views of one host storage, so the CPU
    // kernel's overlap checks see them: the alias cache alone gives a fresh host storage once its entries
    // are all lent (a call over more storages than it holds), and the overlap went unseen.
    owned = hostAliasOver(same_storage->alias_storage, t);
  } else {
    lent = lendHostAlias(thread_.aliases, t, owned);
  }
  const at::Tensor& alias = lent != nullptr ? lent->tensor : owned;
  c10::StorageImpl* storage = alias.storage().unsafeGetStorageImpl();
  c10::TensorImpl* impl = alias.unsafeGetTensorImpl();
  pairs_.push_back({impl, storage, storage->data(), &t, written, lent, std::move(owned)});
  return pairs_.size() - 1;
}

// Also on errors: a lent alias must be free for the thread's next call.
HostCall::~HostCall() {
  for (const auto& p : pairs_) {
    if (p.lent != nullptr) p.lent->lent = false;
  }
}

const at::Tensor* HostCall::originalOf(const at::Tensor& alias) const {
  for (const auto& p : pairs_) {
    if (p.alias_impl == alias.unsafeGetTensorImpl()) return p.original;
  }
  return nullptr;
}

at::Tensor HostCall::toDevice(at::Tensor&& out) const {
  if (!out.defined() || out.device().is_privateuseone()) return std::move(out);
  if (const at::Tensor* original = originalOf(out)) return *original;  // in-place / out=: the caller's tensor
  c10::StorageImpl* storage = out.has_storage() ? out.storage().unsafeGetStorageImpl() : nullptr;
  for (const auto& p : pairs_) {
    if (p.alias_storage == storage) {  // a view of an input
      return deviceTensorOver(p.original->storage(), out, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1));
    }
  }
  if (staged_) return uploadHostResult(out, device_, *currentQueue(device_));
  return fromHostResult(std::move(out), device_);  // a fresh result, allocated in device memory during the kernel
}

// out= kernels may resize their outputs: mirror the new geometry (and grown storage) on the neuron tensor.
void HostCall::syncWritten(const Pair& p) const {
  if (p.alias_storage->data() != p.alias_data) {
    c10::DataPtr grown = p.alias_storage->set_data_ptr(c10::DataPtr());
    retagAsDevice(grown, device_);
    auto* target = p.original->storage().unsafeGetStorageImpl();
    size_t nbytes = p.alias_storage->nbytes();
    target->set_data_ptr_noswap(std::move(grown));
    target->set_nbytes(nbytes);
  }
  syncGeometry(p);
}

// nrt: the written storages go back to the device (grown first when an out= kernel resized its copy).
void HostCall::writeBackStaged() {
  auto queue = currentQueue(device_);
  for (auto& s : storages_) {
    if (!s.written) continue;
    if (s.host.nbytes() != s.device_storage->nbytes()) native::resizeStorageBytes(s.device_storage, s.host.nbytes());
    writeStorage(s.host, s.original->storage(), *queue);
  }
}

void HostCall::syncGeometry(const Pair& p) const {
  c10::TensorImpl* alias = p.alias_impl;
  c10::TensorImpl* original = p.original->unsafeGetTensorImpl();
  if (alias->sizes() != original->sizes() || alias->strides() != original->strides() ||
      alias->storage_offset() != original->storage_offset()) {
    original->set_sizes_and_strides(alias->sizes(), alias->strides(), alias->storage_offset());
  }
  // A kernel may flip the lazy bits of its out= (linalg_lu_solve with left=False returns X^H as a conjugate
  // view of the buffer it solved into); they are part of the value.
  if (alias->is_conj() != original->is_conj()) original->_set_conj(alias->is_conj());
  if (alias->is_neg() != original->is_neg()) original->_set_neg(alias->is_neg());
}

void HostCall::addContext(c10::Error& e) const {
  e.add_context(c10::str("while running ", entry_.name, " on neuron:", static_cast<int>(device_),
                         staged_ ? " (on the CPU: the op has no NEFF on this runtime)" : " (host kernel on the simulator)"));
}

int HostCall::enterStream() {
  prepareHostKernelThread(thread_);
  const int stream = static_cast<int>(currentStream(device_).id());  // looked up once: this is the per-op path
  Queue& queue = queueRef(device_, stream);
  if (!queue.idle()) queue.drain();  // stream order: earlier async work on this stream finishes first
  return stream;
}

HostCall::Scope::Scope(HostCall& call)
    : call_(call), stream_(call.enterStream()), activity_(call.entry_.name, call.device_, stream_) {
  if (!call.staged_) capture_.emplace(call.thread_, call.device_, stream_);
}

void HostCall::Scope::done() {
  if (call_.staged_) {
    call_.writeBackStaged();
    for (const auto& p : call_.pairs_) {
      if (p.written) call_.syncGeometry(p);
    }
  } else {
    for (const auto& p : call_.pairs_) {
      if (p.written) call_.syncWritten(p);
    }
  }
  if (C10_UNLIKELY(activity_.isOpen())) {
    for (const auto& p : call_.pairs_) activity_.addTensor(*p.original, p.written);
    activity_.close();
  }
}

} // namespace torchneuron
