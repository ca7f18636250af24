#include "aten/native/Minimal.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include "allocator/CachingAllocator.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron::native {

namespace {
const c10::DispatchKeySet kNeuronKeys(c10::DispatchKey::PrivateUse1);

void checkFactoryArgs(const char* op, std::optional<at::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, "neuron: ", op,
              " supports only strided tensors on neuron, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false), "neuron: ", op,
              ": only CPU tensors can be pinned; pin the host tensor (pin_memory=True on CPU) instead");
}

c10::DeviceIndex indexOf(std::optional<at::Device> device) {
  return device && device->has_index() ? device->index() : currentDevice();
}
} // namespace

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  checkFactoryArgs("empty", layout, pin_memory);
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, indexOf(device)));
  return at::detail::empty_generic(size, &cachingAllocator(), kNeuronKeys,
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  checkFactoryArgs("empty_strided", layout, pin_memory);
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, indexOf(device)));
  return at::detail::empty_strided_generic(size, stride, &cachingAllocator(), kNeuronKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) { return at::native::view(self, size); }

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

void resizeStorageBytes(c10::StorageImpl* storage, size_t nbytes) {
  TORCH_CHECK(storage->resizable(), "neuron: trying to resize a storage that is not resizable");
  c10::DeviceIndex device = storage->device().index();
  c10::DataPtr fresh = cachingAllocator().allocateOn(device, static_cast<int>(currentStream(device).id()), nbytes);
  size_t keep = std::min(nbytes, storage->nbytes());
  if (keep > 0) {
    runtime().copyDeviceToDevice(fresh.get(), storage->data(), keep, *currentQueue(device), /*async=*/false);
  }
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(nbytes);
}

namespace {
void ensureStorageHolds(const at::Tensor& self) {
  if (self.numel() == 0) return;
  size_t needed = at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(),
                                                   self.storage_offset());
  auto* storage = self.storage().unsafeGetStorageImpl();
  if (needed > storage->nbytes()) resizeStorageBytes(storage, needed);
}
} // namespace

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format && *memory_format != at::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  ensureStorageHolds(self);
  return self;
}

at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, int64_t offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(offset);
  if (stride.empty()) impl->set_sizes_contiguous(size);
  else impl->set_sizes_and_strides(size, stride);
  ensureStorageHolds(self);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source) {
  int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage_offset(self, source, 0, {numel}, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() != source.unsafeGetTensorImpl()) {
    set_storage_offset(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
  }
  return self;
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  auto storage = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), 0,
                                                       cachingAllocator().allocate(0), &cachingAllocator(), true);
  return set_storage_offset(self, at::Storage(std::move(storage)), 0, {0}, {});
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    // Only an empty destination takes the source's shape (an out= result still to be sized); copying into
    // a tensor of another shape would silently reshape the caller's tensor, which copy_ never does.
    TORCH_CHECK(dst.numel() == 0, "neuron: _copy_from_and_resize cannot copy a tensor of shape ", self.sizes(),
                " into one of shape ", dst.sizes(), " on ", dst.device(),
                ": only an empty destination is resized. Resize it first (dst.resize_(src.shape)) or copy into a "
                "tensor of the same shape");
    if (dst.device().type() == c10::DeviceType::PrivateUse1) {
      dst.unsafeGetTensorImpl()->set_sizes_contiguous(self.sizes());
      ensureStorageHolds(dst);
    } else {
      dst.resize_(self.sizes());  // a host destination: its own device's resize
    }
  }
  if (dst.device().type() != c10::DeviceType::PrivateUse1) {
    return dst.copy_(self);  // device -> host, through copy_'s own dispatch
  }
  return copy_from(self, dst, /*non_blocking=*/false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "neuron: a Tensor with ", self.numel(),
              " elements cannot be converted to a Scalar (item() needs exactly one element)");
  auto host = at::empty({}, self.options().device(at::kCPU));
  c10::DeviceIndex device = self.device().index();
  const char* src = static_cast<const char*>(self.storage().data()) + self.storage_offset() * self.itemsize();
  // Reading a value back is a synchronisation point, as on every accelerator.
  runtime().copyDeviceToHost(host.data_ptr(), src, self.itemsize(), *currentQueue(device), /*async=*/false);
  return host.item();
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "neuron: record_stream expects a neuron "
              "stream, got ", stream);
  cachingAllocator().recordStream(self.storage().data_ptr(), stream);
}

} // namespace torchneuron::native
