// Copies between host and neuron memory and between neuron devices, ordered on the current streams.
// Same-dtype dense copies are plain byte transfers through the Runtime (nrt_tensor_read/write/copy on nrt);
// conversions and strided layouts run the host copy kernel: on zero-copy aliases on the simulator, through
// host copies of the storages on nrt (HostStaging.h).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>

#include "aten/native/HostAlias.h"
#include "aten/native/HostStaging.h"
#include "aten/native/Minimal.h"
#include "device/PinnedAllocator.h"
#include "device/Streams.h"
#include "profiler/DeviceActivity.h"
#include "runtime/Runtime.h"

namespace torchneuron::native {

namespace {
bool isBytewise(const at::Tensor& src, const at::Tensor& dst) {
  return src.dtype() == dst.dtype() && src.sizes().equals(dst.sizes()) && src.is_contiguous() &&
      dst.is_contiguous() && src.is_conj() == dst.is_conj() && src.is_neg() == dst.is_neg();
}

bool isPinned(const at::Tensor& host) {
  return host.numel() > 0 && pinnedAllocator().isPinned(host.storage().data());
}

const void* bytesOf(const at::Tensor& t) {
  return static_cast<const char*>(t.storage().data()) + t.storage_offset() * t.itemsize();
}

void* mutableBytesOf(const at::Tensor& t) {
  return static_cast<char*>(t.storage().mutable_data()) + t.storage_offset() * t.itemsize();
}

// ATen's copy_ early return for a view of the very bytes it would write (x.copy_(x[:])): nothing to do.
bool isSameData(const at::Tensor& src, const at::Tensor& dst) {
  return dst.is_alias_of(src) && dst.storage_offset() == src.storage_offset() && dst.strides().equals(src.strides()) &&
      dst.sizes().equals(src.sizes()) && dst.scalar_type() == src.scalar_type() && dst.is_conj() == src.is_conj() &&
      dst.is_neg() == src.is_neg();
}
} // namespace

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  // ATen's copy_ hands a neuron tensor to _copy_from before its own checks, which run only for devices it
  // copies itself: they are made here, in the same order and with the same errors as the CPU's, in every
  // direction. Without them a byte copy between overlapping views (x.copy_(x.t())) silently mixed old and new
  // values.
  if (isSameData(self, dst)) return dst;
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, self);
  if (dst.numel() == 0) return dst;
  Runtime& rt = runtime();
  const bool src_dev = self.device().is_privateuseone();
  const bool dst_dev = dst.device().is_privateuseone();
  const bool bytewise = isBytewise(self, dst);
  const size_t nbytes = dst.nbytes();
  // The closures hold both tensors, so neither buffer is freed or reused before the copy has run.
  if (src_dev && !dst_dev) {
    auto q = currentQueue(self.device().index());
    const bool async = non_blocking && isPinned(dst);
    if (bytewise) {
      rt.copyDeviceToHost(mutableBytesOf(dst), bytesOf(self), nbytes, *q, async,
                          profiler::copyDone([self, dst] {}, "Memcpy DtoH (neuron -> host)", self, nbytes));
    } else if (rt.hostAddressable()) {
      q->submit([src = hostAlias(self), dst]() mutable { dst.copy_(src); }, async);
    } else {
      copyThroughHost(self, dst, *q);
    }
  } else if (!src_dev && dst_dev) {
    auto q = currentQueue(dst.device().index());
    const bool async = non_blocking && isPinned(self);
    if (bytewise) {
      rt.copyHostToDevice(mutableBytesOf(dst), bytesOf(self), nbytes, *q, async,
                          profiler::copyDone([self, dst] {}, "Memcpy HtoD (host -> neuron)", dst, nbytes));
    } else if (rt.hostAddressable()) {
      q->submit([self, out = hostAlias(dst)]() mutable { out.copy_(self); }, async);
    } else {
      copyThroughHost(self, dst, *q);
    }
  } else {
    TORCH_CHECK(src_dev && dst_dev, "neuron: _copy_from called without a neuron tensor");
    auto dst_q = currentQueue(dst.device().index());
    if (self.device() != dst.device()) {
      // Peer copy: ordered after the work already queued on the source device's current stream.
      auto src_q = currentQueue(self.device().index());
      dst_q->waitFor(src_q, src_q->lastSubmitted());
    }
    if (bytewise) {
      rt.copyDeviceToDevice(mutableBytesOf(dst), bytesOf(self), nbytes, *dst_q, non_blocking,
                            profiler::copyDone([self, dst] {}, "Memcpy DtoD (neuron -> neuron)", dst, nbytes));
    } else if (rt.hostAddressable()) {
      dst_q->submit([src = hostAlias(self), out = hostAlias(dst)]() mutable { out.copy_(src); }, non_blocking);
    } else {
      copyThroughHost(self, dst, *dst_q);
    }
  }
  return dst;
}

} // namespace torchneuron::native
