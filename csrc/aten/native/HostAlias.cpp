#include "aten/native/HostAlias.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include "allocator/ExternalMemory.h"
#include "aten/native/HostOutputAllocator.h"
#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
void noDelete(void*) {}

// The adopted tensor's device memory is charged to its device for as long as the tensor lives.
struct AdoptedHostMemory {
  at::Tensor keep_alive;
  c10::DeviceIndex device;
  size_t nbytes;
};

void releaseAdopted(void* ctx) {
  auto* adopted = static_cast<AdoptedHostMemory*>(ctx);
  const void* data = adopted->keep_alive.storage().data();
  releaseExternalMemory(adopted->device, data, adopted->nbytes);
  delete adopted;
}

// A CPU storage over a device storage's bytes; it does not own them. If a kernel grows it, the new bytes come
// from device memory (HostOutputAllocator), and HostCall hands them to the device storage.
c10::intrusive_ptr<c10::StorageImpl> aliasStorage(const c10::Storage& storage) {
  return c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), storage.nbytes(),
      c10::DataPtr(const_cast<void*>(storage.data()), nullptr, &noDelete, c10::Device(c10::DeviceType::CPU)),
      hostOutputAllocator(), /*resizable=*/true);
}

// Element by element, sizes and strides in one pass: tensors have few dims, and ArrayRef::equals calls memcmp.
bool sameGeometry(c10::IntArrayRef a_sizes, c10::IntArrayRef a_strides, c10::IntArrayRef b_sizes,
                  c10::IntArrayRef b_strides) {
  const size_t n = a_sizes.size();
  if (n != b_sizes.size() || a_strides.size() != n || b_strides.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (a_sizes[i] != b_sizes[i] || a_strides[i] != b_strides[i]) return false;
  }
  return true;
}

void setGeometry(c10::TensorImpl* alias, const at::Tensor& t) {
  // A small op reuses its cached alias with the geometry it already has; set_sizes_and_strides would recompute
  // numel and every contiguity flag for nothing (it was half the cost of an alias).
  if (!sameGeometry(alias->sizes(), alias->strides(), t.sizes(), t.strides()) ||
      alias->storage_offset() != t.storage_offset()) {
    alias->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  }
  // Lazy conjugation / negation are views too: the host kernel must see them, not the raw bytes.
  if (alias->is_conj() != t.is_conj()) alias->_set_conj(t.is_conj());
  if (alias->is_neg() != t.is_neg()) alias->_set_neg(t.is_neg());
}

at::Tensor tensorOver(const c10::intrusive_ptr<c10::StorageImpl>& storage, const at::Tensor& t) {
  auto alias = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(storage),
                                                        c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  setGeometry(alias.unsafeGetTensorImpl(), t);
  return alias;
}
} // namespace

at::Tensor hostAlias(const at::Tensor& t) {
  TORCH_CHECK(runtime().hostAddressable(), "neuron: host views of device memory need the sim runtime");
  return tensorOver(aliasStorage(t.storage()), t);
}

at::Tensor hostAliasOver(c10::StorageImpl* alias_storage, const at::Tensor& t) {
  return tensorOver(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(alias_storage), t);
}

CachedAlias* lendHostAlias(AliasCache& cache, const at::Tensor& t, at::Tensor& owned) {
  const c10::Storage& storage = t.storage();
  const c10::StorageImpl* device = storage.unsafeGetStorageImpl();
  const void* data = storage.data();
  const size_t nbytes = storage.nbytes();
  CachedAlias* entry = nullptr;
  for (CachedAlias& e : cache.entries) {
    if (e.device == device && e.data == data && e.nbytes == nbytes) {
      entry = &e;
      break;
    }
  }
  if (C10_LIKELY(entry != nullptr && entry->storage->data() == data && entry->storage->nbytes() == nbytes)) {
    c10::TensorImpl* impl = entry->tensor.unsafeGetTensorImpl();
    if (!entry->lent && entry->tensor.use_count() == 1 &&
        impl->storage().unsafeGetStorageImpl() == entry->storage.get()) {
      if (impl->dtype() != t.dtype()) impl->set_storage_and_dtype(c10::Storage(entry->storage), t.dtype());
      setGeometry(impl, t);
      entry->lent = true;
      return entry;
    }
    owned = tensorOver(entry->storage, t);  // the cached tensor is in use (or was re-pointed by a kernel)
    return nullptr;
  }
  TORCH_CHECK(runtime().hostAddressable(), "neuron: host views of device memory need the sim runtime");
  if (entry == nullptr || entry->lent) {  // a miss: replace the oldest entry that is not lent
    entry = nullptr;
    for (size_t i = 0; i < kCachedAliases && entry == nullptr; ++i) {
      CachedAlias& e = cache.entries[cache.next];
      cache.next = (cache.next + 1) % kCachedAliases;
      if (!e.lent) entry = &e;
    }
    if (entry == nullptr) {  // every entry is lent (a call with many arguments): an alias of its own
      owned = hostAlias(t);
      return nullptr;
    }
  }
  entry->device = device;
  entry->data = data;
  entry->nbytes = nbytes;
  entry->storage = aliasStorage(storage);
  entry->tensor = tensorOver(entry->storage, t);
  entry->lent = true;
  return entry;
}

at::Tensor adoptHostTensor(const at::Tensor& cpu, c10::DeviceIndex device) {
  TORCH_CHECK(cpu.device().is_cpu(), "neuron: _adopt_host_tensor expects a CPU tensor, got ", cpu.device());
  TORCH_CHECK(runtime().hostAddressable(), "neuron: adopting host memory needs the sim runtime");
  const c10::Storage& storage = cpu.storage();
  chargeExternalMemory(device, storage.data(), storage.nbytes());  // may raise torch.OutOfMemoryError
  auto* ctx = new AdoptedHostMemory{cpu, device, storage.nbytes()};
  auto impl = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), storage.nbytes(),
      c10::DataPtr(const_cast<void*>(storage.data()), ctx, &releaseAdopted,
                   c10::Device(c10::DeviceType::PrivateUse1, device)),
      nullptr, /*resizable=*/false);
  return deviceTensorOver(c10::Storage(std::move(impl)), cpu, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1));
}

at::Tensor deviceTensorOver(const c10::Storage& storage, const at::Tensor& geometry_like, c10::DispatchKeySet keys) {
  auto t = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(storage), keys, geometry_like.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(geometry_like.sizes(), geometry_like.strides(),
                                                 geometry_like.storage_offset());
  return t;
}

} // namespace torchneuron

#include <ATen/ATen.h>

#include "allocator/CachingAllocator.h"

namespace torchneuron {

namespace {
// `owned`: `out` is the caller's to give away (moved from on return), so a use count of 1 means nobody else
// holds the result.
at::Tensor fromHostResultImpl(at::Tensor& out, c10::DeviceIndex device, bool owned) {
  if (!out.defined() || out.device().is_privateuseone()) return owned ? std::move(out) : out;
  auto* storage = out.storage().unsafeGetStorageImpl();
  if (cachingAllocator().owns(storage->data_ptr())) {
    retagAsDevice(storage->mutable_data_ptr(), device);
    storage->set_allocator(&cachingAllocator());
    c10::TensorImpl* impl = out.unsafeGetTensorImpl();
    if (out.use_count() == 1 && impl->allow_tensor_metadata_change()) {
      // Nobody else holds the kernel's result: turn it into the neuron tensor in place (device from the
      // retagged storage, backend dispatch keys swapped) instead of allocating a second TensorImpl per op.
      // The storage is moved out and back (set_storage_keep_dtype takes it by value) so that refreshing the
      // tensor's device costs no reference-count traffic.
      c10::Storage same = std::move(const_cast<c10::Storage&>(impl->storage()));
      impl->set_storage_keep_dtype(std::move(same));
      impl->_change_backend_component_keys(c10::Device(c10::DeviceType::PrivateUse1, device));
      return owned ? std::move(out) : out;
    }
    at::Tensor result = deviceTensorOver(out.storage(), out, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1));
    // A fresh result may come back as a lazily conjugated / negated view (vdot(a, b.conj()) ends in .conj()):
    // the bits are part of its value.
    if (out.is_conj()) result._set_conj(true);
    if (out.is_neg()) result._set_neg(true);
    return result;
  }
  at::Tensor copy = at::empty_strided(out.sizes(), out.strides(),
                                      out.options().device(c10::Device(c10::DeviceType::PrivateUse1, device)));
  hostAlias(copy).copy_(out);
  return copy;
}
} // namespace

at::Tensor fromHostResult(const at::Tensor& out, c10::DeviceIndex device) {
  return fromHostResultImpl(const_cast<at::Tensor&>(out), device, /*owned=*/false);
}

at::Tensor fromHostResult(at::Tensor&& out, c10::DeviceIndex device) {
  return fromHostResultImpl(out, device, /*owned=*/true);
}

} // namespace torchneuron
