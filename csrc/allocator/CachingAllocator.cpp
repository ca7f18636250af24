#include "allocator/CachingAllocator.h"

#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>

#include <mutex>

#include "allocator/DeviceCache.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
// Live allocations: pointer -> block, sharded so concurrent frees from many threads rarely contend.
constexpr size_t kShards = 16;
struct Shard {
  std::mutex mutex;
  ska::flat_hash_map<void*, Block*> blocks;
};
Shard g_shards[kShards];

Shard& shardOf(void* ptr) { return g_shards[(reinterpret_cast<uintptr_t>(ptr) >> 9) % kShards]; }

Block* findLive(void* ptr, bool remove) {
  Shard& shard = shardOf(ptr);
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.blocks.find(ptr);
  if (it == shard.blocks.end()) return nullptr;
  Block* block = it->second;
  if (remove) shard.blocks.erase(it);
  return block;
}

} // namespace

CachingAllocator& cachingAllocator() {
  static CachingAllocator* instance = new CachingAllocator();  // leaked: tensors may outlive static teardown
  return *instance;
}

namespace {
void deleteDevicePtr(void* ptr) {
  if (ptr == nullptr) return;
  Block* block = findLive(ptr, /*remove=*/true);
  if (block == nullptr) {
    TORCH_WARN("neuron: ignoring free of ", ptr, ", which the caching allocator does not own (double free?)");
    return;
  }
  cachingAllocator().deviceCache(block->device).free(block);
}
} // namespace

CachingAllocator::CachingAllocator() {
  for (int i = 0; i < 128; ++i) caches_.emplace_back(nullptr);
}

CachingAllocator::~CachingAllocator() = default;

DeviceCache& CachingAllocator::deviceCache(c10::DeviceIndex device) {
  TORCH_CHECK(device >= 0 && device < 128, "neuron: invalid device index ", static_cast<int>(device));
  auto& slot = caches_[device];
  if (C10_UNLIKELY(!slot)) {
    static std::mutex create_mutex;
    std::lock_guard<std::mutex> lock(create_mutex);
    if (!slot) {
      checkDeviceIndex(device);
      slot = std::make_unique<DeviceCache>(device);
    }
  }
  return *slot;
}

c10::DataPtr CachingAllocator::allocateOn(c10::DeviceIndex device, int stream_index, size_t nbytes) {
  c10::Device dev(c10::DeviceType::PrivateUse1, device);
  if (nbytes == 0) {
    runtime();  // still reports a misconfigured runtime or a bad fork
    return c10::DataPtr(nullptr, nullptr, &deleteDevicePtr, dev);
  }
  Block* block = deviceCache(device).malloc(stream_index, nbytes);
  {
    Shard& shard = shardOf(block->ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.blocks[block->ptr] = block;
  }
  return c10::DataPtr(block->ptr, block->ptr, &deleteDevicePtr, dev);
}

c10::DataPtr CachingAllocator::allocate(size_t nbytes) {
  c10::DeviceIndex device = currentDevice();
  return allocateOn(device, static_cast<int>(currentStream(device).id()), nbytes);
}

c10::DeleterFnPtr CachingAllocator::raw_deleter() const { return &deleteDevicePtr; }

void CachingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  // Device to device, in order on the current stream (on nrt the addresses are not host memory).
  Runtime& rt = runtime();
  const int device = rt.deviceOf(dest);
  TORCH_CHECK(device >= 0, "neuron: Allocator::copy_data: ", dest, " is not neuron device memory");
  rt.copyDeviceToDevice(dest, src, count, *currentQueue(static_cast<c10::DeviceIndex>(device)), /*async=*/false);
}

bool CachingAllocator::initialized() { return runtimeInitialized(); }

void CachingAllocator::emptyCache(c10::MempoolId_t) {
  if (!runtimeInitialized()) return;
  for (auto& c : caches_) {
    if (c) c->emptyCache();
  }
}

void CachingAllocator::recordStream(const c10::DataPtr& ptr, c10::Stream stream) {
  if (!ptr.get()) return;
  Block* block = findLive(ptr.get(), /*remove=*/false);
  if (block == nullptr) return;  // not ours (e.g. memory adopted from the host): nothing to protect
  deviceCache(block->device).recordStream(block, static_cast<int>(stream.id()));
}

c10::CachingDeviceAllocator::DeviceStats CachingAllocator::getDeviceStats(c10::DeviceIndex device) {
  return deviceCache(device).stats();
}

void CachingAllocator::resetAccumulatedStats(c10::DeviceIndex device) { deviceCache(device).resetAccumulatedStats(); }

void CachingAllocator::resetPeakStats(c10::DeviceIndex device) { deviceCache(device).resetPeakStats(); }

std::pair<size_t, size_t> CachingAllocator::getMemoryInfo(c10::DeviceIndex device) {
  Runtime& rt = runtime();
  auto total = static_cast<size_t>(rt.capacity(device));
  auto used = static_cast<size_t>(rt.bytesInUse(device));
  return {total - used, total};
}

void CachingAllocator::setMemoryFraction(double fraction, c10::DeviceIndex device) {
  deviceCache(device).setMemoryFraction(fraction);
}

bool CachingAllocator::freeIfLive(void* ptr) {
  Block* block = ptr ? findLive(ptr, /*remove=*/true) : nullptr;
  if (block == nullptr) return false;
  deviceCache(block->device).free(block);
  return true;
}

bool CachingAllocator::owns(const c10::DataPtr& ptr) const { return ptr.get_deleter() == &deleteDevicePtr; }

} // namespace torchneuron
