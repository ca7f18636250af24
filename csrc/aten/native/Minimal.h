#pragma once
// The neuron implementations of the ops every PrivateUse1 backend must provide itself: allocation, views,
// resizing, storage swaps, copies and reading a scalar back to the host.
#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

namespace torchneuron::native {

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory);
at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset);
at::Tensor view(const at::Tensor& self, c10::IntArrayRef size);
at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride);
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format);
at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, int64_t offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride);
at::Tensor& set_storage(at::Tensor& self, at::Storage source);
at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source);
at::Tensor& set_empty(at::Tensor& self);
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
at::Scalar local_scalar_dense(const at::Tensor& self);
void record_stream(at::Tensor& self, c10::Stream stream);

// Grows a neuron storage in place, keeping its contents (also used by storage.resize_()).
void resizeStorageBytes(c10::StorageImpl* storage, size_t nbytes);

} // namespace torchneuron::native
