#pragma once
// Host copies of neuron storages, for a runtime whose device memory the host cannot address (nrt). A host
// kernel there runs on copies: every neuron storage an op touches is read into host memory once, written
// back if the op wrote it, and fresh results are uploaded into new device memory. All transfers are ordered
// on the given queue and finished when these functions return.
#include <ATen/core/Tensor.h>

#include "runtime/Queue.h"

namespace torchneuron {

// A CPU storage with the bytes of neuron storage `device`.
c10::Storage readStorage(const c10::Storage& device, Queue& q);
// Writes all of host storage `host` into neuron storage `device` (same size).
void writeStorage(const c10::Storage& host, const c10::Storage& device, Queue& q);
// A CPU tensor over `host` with the sizes, strides, offset and conj/neg bits of `geometry`.
at::Tensor hostTensorOver(const c10::Storage& host, const at::Tensor& geometry);
// A CPU tensor (a host kernel's fresh result) as a new neuron tensor of `device`: its whole storage is
// uploaded, so views keep their offset and strides.
at::Tensor uploadHostResult(const at::Tensor& cpu, c10::DeviceIndex device, Queue& q);
// dst.copy_(src) where at least one is a neuron tensor, through host memory (conversions and strided
// layouts on nrt; plain byte copies never come here).
void copyThroughHost(const at::Tensor& src, const at::Tensor& dst, Queue& q);

} // namespace torchneuron
