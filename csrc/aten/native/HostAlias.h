#pragma once
// Zero-copy views between neuron tensors and host tensors on the simulator, where device memory is
// host-addressable. This is how host kernels execute "on the device buffers".
#include <ATen/core/Tensor.h>

namespace torchneuron {

// A CPU tensor over the same bytes as `t` (same sizes, strides, offset). Its storage does not own the
// memory; if a kernel grows it, the new bytes come from device memory (see HostOutputAllocator).
at::Tensor hostAlias(const at::Tensor& t);

// hostAlias for the host-kernel path (HostCall): the same alias, taken from a per-thread cache of recent ones
// when it still describes the same bytes, so a small op allocates no alias objects. The caller must not keep
// the result beyond the kernel call (the next one reuses it).
at::Tensor reusableHostAlias(const at::Tensor& t);

// A neuron tensor over the bytes of a CPU tensor, keeping that tensor alive (for results produced by an
// external executor such as XLA:CPU). Not counted by the caching allocator.
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
