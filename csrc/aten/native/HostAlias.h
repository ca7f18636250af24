#pragma once
// Zero-copy views between neuron tensors and host tensors on the simulator, where device memory is
// host-addressable. This is how host kernels execute "on the device buffers".
#include <ATen/core/Tensor.h>

namespace torchneuron {

// A CPU tensor over the same bytes as `t` (same sizes, strides, offset). Its storage does not own the
// memory; if a kernel grows it, the new bytes come from device memory (see HostOutputAllocator).
at::Tensor hostAlias(const at::Tensor& t);
// A CPU tensor with the geometry of `t` over `alias_storage`, an existing host alias of t's storage (one host
// storage per neuron storage in a call, so the CPU kernel sees which arguments share memory).
at::Tensor hostAliasOver(c10::StorageImpl* alias_storage, const at::Tensor& t);

// One entry of the per-thread cache of recent host aliases, by device storage. While `lent`, one host call
// refers to `tensor` without holding a reference (each copy of a tensor is two atomic reference-count updates);
// nested calls and further arguments over the same storage then get aliases of their own.
struct CachedAlias {
  const c10::StorageImpl* device = nullptr;  // identifies the device storage (never dereferenced)
  const void* data = nullptr;
  size_t nbytes = 0;
  bool lent = false;
  c10::intrusive_ptr<c10::StorageImpl> storage;
  at::Tensor tensor;
};

// The aliases recent host kernels on a thread used (HostThreadState). A small op then allocates no alias
// objects: the storage is reused while it still describes the same bytes, the tensor while nobody else holds it
// (its geometry is reset each time). Entries hold no device memory; a stale one is replaced unless it is lent.
constexpr size_t kCachedAliases = 8;
struct AliasCache {
  CachedAlias entries[kCachedAliases];
  size_t next = 0;
};

// hostAlias for the host-kernel path (HostCall), from the calling thread's cache. Returns the entry, lent to
// the caller until it clears `lent` (before the thread's next host call, which may reuse it), or nullptr with
// `owned` set to an alias of the caller's own (the entry was in use).
CachedAlias* lendHostAlias(AliasCache& cache, const at::Tensor& t, at::Tensor& owned);

// A neuron tensor over the bytes of a CPU tensor, keeping that tensor alive (for results produced by an
// external executor such as XLA:CPU). Its bytes are charged to `device` while it lives (allocator/ExternalMemory.h):
// it raises torch.OutOfMemoryError as an allocation of that size would.
at::Tensor adoptHostTensor(const at::Tensor& cpu, c10::DeviceIndex device);

// Wraps a storage as a neuron tensor with the given geometry.
at::Tensor deviceTensorOver(const c10::Storage& storage, const at::Tensor& geometry_like,
                            c10::DispatchKeySet keys);

} // namespace torchneuron

namespace torchneuron {
// A result a host kernel produced inside CaptureOutputsOnDevice, as a neuron tensor of `device`: its
// device-memory storage is handed over without a copy (host memory, which should not happen, is copied).
at::Tensor fromHostResult(const at::Tensor& out, c10::DeviceIndex device);
// The same for a result the caller gives away (the host path's own results): no reference-count traffic.
at::Tensor fromHostResult(at::Tensor&& out, c10::DeviceIndex device);
} // namespace torchneuron
