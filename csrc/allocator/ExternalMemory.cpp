#include "allocator/ExternalMemory.h"

#include <c10/core/Allocator.h>

#include <mutex>

#include "allocator/CachingAllocator.h"
#include "allocator/DeviceCache.h"
#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
// The allocator's block granularity and small-pool bound (DeviceCache.cpp): an external buffer is charged as
// the block the allocator would have made for it, so the same tensor counts the same eagerly and compiled.
constexpr size_t kBlockSize = 512;
constexpr size_t kSmallSize = 1 << 20;

size_t chargedSize(size_t n) { return kBlockSize * ((n + kBlockSize - 1) / kBlockSize); }

// DeviceCache::update, which is inlined into DeviceCache.cpp: "all" and the pool the size would use.
void count(c10::CachingAllocator::StatArray& stat, bool small, int64_t delta) {
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto pool = static_cast<size_t>(small ? c10::CachingAllocator::StatType::SMALL_POOL
                                              : c10::CachingAllocator::StatType::LARGE_POOL);
  for (size_t i : {kAll, pool}) {
    if (delta >= 0) stat[i].increase(static_cast<size_t>(delta));
    else stat[i].decrease(static_cast<size_t>(-delta));
  }
}
} // namespace

void DeviceCache::chargeExternal(const void* ptr, size_t nbytes) {
  const size_t size = chargedSize(nbytes);
  std::lock_guard<SpinLock> lock(mutex_);
  if (!pending_.empty()) processEvents();
  const auto fits = [&] {
    const auto limit = static_cast<int64_t>(memory_fraction_ * static_cast<double>(runtime().capacity(device_)));
    return stats_.reserved_bytes[0].current + static_cast<int64_t>(size) <= limit;
  };
  if (!fits()) {
    // As malloc does when the device is full: wait for pending frees, hand the cache back, and try once more.
    stats_.num_alloc_retries += 1;
    releaseCachedBlocks();
    if (!fits()) {
      stats_.num_ooms += 1;
      raiseOutOfMemory(nbytes, size);
    }
  }
  const bool small = size <= kSmallSize;
  const auto bytes = static_cast<int64_t>(size);
  stats_.num_device_alloc += 1;
  count(stats_.segment, small, 1);
  count(stats_.reserved_bytes, small, bytes);
  count(stats_.allocation, small, 1);
  count(stats_.allocated_bytes, small, bytes);
  count(stats_.active, small, 1);
  count(stats_.active_bytes, small, bytes);
  count(stats_.requested_bytes, small, static_cast<int64_t>(nbytes));
  reportExternal(ptr, bytes);
}

void DeviceCache::releaseExternal(const void* ptr, size_t nbytes) {
  const size_t size = chargedSize(nbytes);
  std::lock_guard<SpinLock> lock(mutex_);
  const bool small = size <= kSmallSize;
  const auto bytes = static_cast<int64_t>(size);
  stats_.num_device_free += 1;
  count(stats_.segment, small, -1);
  count(stats_.reserved_bytes, small, -bytes);
  count(stats_.allocation, small, -1);
  count(stats_.allocated_bytes, small, -bytes);
  count(stats_.active, small, -1);
  count(stats_.active_bytes, small, -bytes);
  count(stats_.requested_bytes, small, -static_cast<int64_t>(nbytes));
  reportExternal(ptr, -bytes);
}

// A working set has no address of its own (ptr null): the profiler, which pairs frees with allocations by
// address, hears only about buffers.
void DeviceCache::reportExternal(const void* ptr, int64_t delta) {
  if (ptr == nullptr) return;
  c10::reportMemoryUsageToProfiler(const_cast<void*>(ptr), delta, stats_.allocated_bytes[0].current,
                                   stats_.reserved_bytes[0].current,
                                   c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_)));
}

void chargeExternalMemory(c10::DeviceIndex device, const void* ptr, size_t nbytes) {
  if (nbytes == 0) return;  // as malloc: an empty tensor holds no device memory
  cachingAllocator().deviceCache(device).chargeExternal(ptr, nbytes);
}

void releaseExternalMemory(c10::DeviceIndex device, const void* ptr, size_t nbytes) {
  if (nbytes == 0) return;
  cachingAllocator().deviceCache(device).releaseExternal(ptr, nbytes);
}

} // namespace torchneuron
