#pragma once
// A caching allocator over the Runtime, with torch.cuda's design and statistics: per-device small (<= 1 MiB)
// and large pools, block splitting and coalescing, reuse only on the allocating stream unless
// record_stream() widened it, and OOM recovery (synchronise, release the cache, retry) before raising.
#include <c10/core/CachingDeviceAllocator.h>

#include <memory>
#include <vector>

namespace torchneuron {

class DeviceCache;

class CachingAllocator final : public c10::DeviceAllocator {
 public:
  CachingAllocator();
  ~CachingAllocator() override;

  // On the current device and stream.
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool initialized() override;
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override;
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override;
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;

  c10::DataPtr allocateOn(c10::DeviceIndex device, int stream_index, size_t nbytes);
  void setMemoryFraction(double fraction, c10::DeviceIndex device);
  // A DataPtr this allocator handed out (used to tell device memory from foreign memory).
  bool owns(const c10::DataPtr& ptr) const;
  // Frees `ptr` when it is a live allocation of this allocator; false (and nothing done) otherwise.
  bool freeIfLive(void* ptr);

  DeviceCache& deviceCache(c10::DeviceIndex device);

 private:
  std::vector<std::unique_ptr<DeviceCache>> caches_;
};

CachingAllocator& cachingAllocator();

} // namespace torchneuron
