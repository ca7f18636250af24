#include "aten/native/HostStaging.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>

#include "aten/native/HostAlias.h"
#include "allocator/CachingAllocator.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron {

c10::Storage readStorage(const c10::Storage& device, Queue& q) {
  const size_t n = device.nbytes();
  c10::Storage host(c10::Storage::use_byte_size_t(), n, c10::GetCPUAllocator(), /*resizable=*/true);
  if (n > 0) runtime().copyDeviceToHost(host.mutable_data(), device.data(), n, q, /*async=*/false);
  return host;
}

void writeStorage(const c10::Storage& host, const c10::Storage& device, Queue& q) {
  const size_t n = std::min(host.nbytes(), device.nbytes());
  if (n > 0) runtime().copyHostToDevice(device.mutable_data(), host.data(), n, q, /*async=*/false);
}

at::Tensor hostTensorOver(const c10::Storage& host, const at::Tensor& geometry) {
  auto t = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(host), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                    geometry.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(geometry.sizes(), geometry.strides(), geometry.storage_offset());
  if (geometry.is_conj()) t._set_conj(true);
  if (geometry.is_neg()) t._set_neg(true);
  return t;
}

at::Tensor uploadHostResult(const at::Tensor& cpu, c10::DeviceIndex device, Queue& q) {
  if (!cpu.defined() || cpu.device().is_privateuseone()) return cpu;
  const c10::Storage& host = cpu.storage();
  c10::DataPtr memory = cachingAllocator().allocateOn(device, static_cast<int>(currentStream(device).id()), host.nbytes());
  auto impl = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), host.nbytes(),
                                                    std::move(memory), &cachingAllocator(), /*resizable=*/true);
  c10::Storage storage(std::move(impl));
  writeStorage(host, storage, q);
  at::Tensor result = deviceTensorOver(storage, cpu, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1));
  if (cpu.is_conj()) result._set_conj(true);
  if (cpu.is_neg()) result._set_neg(true);
  return result;
}

void copyThroughHost(const at::Tensor& src, const at::Tensor& dst, Queue& q) {
  c10::Storage src_host;
  at::Tensor from = src;
  if (src.device().is_privateuseone()) {
    src_host = readStorage(src.storage(), q);
    from = hostTensorOver(src_host, src);
  }
  if (!dst.device().is_privateuseone()) {
    dst.copy_(from);
    return;
  }
  if (dst.is_contiguous() && !dst.is_conj() && !dst.is_neg()) {
    // Only dst's own bytes change: convert on the host, write them.
    at::Tensor dense = at::empty(dst.sizes(), dst.options().device(at::kCPU));
    dense.copy_(from);
    runtime().copyHostToDevice(static_cast<char*>(dst.storage().mutable_data()) + dst.storage_offset() * dst.itemsize(),
                               dense.const_data_ptr(), dst.nbytes(), q, /*async=*/false);
    return;
  }
  // A strided destination: read-modify-write its storage (once, when src shares it).
  const bool shared = src.device().is_privateuseone() && src.storage().is_alias_of(dst.storage());
  c10::Storage dst_host = shared ? src_host : readStorage(dst.storage(), q);
  hostTensorOver(dst_host, dst).copy_(from);
  writeStorage(dst_host, dst.storage(), q);
}

} // namespace torchneuron
