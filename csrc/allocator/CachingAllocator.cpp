#include "allocator/CachingAllocator.h"

#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <mutex>

#include "allocator/DeviceCache.h"
#include "runtime/CurrentDevice.h"
#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
// The devices whose caches exist, in creation order: a free looks its pointer up in them (each cache keeps
// its own live blocks under its own mutex, so an allocation or a free takes one lock).
std::array<std::atomic<DeviceCache*>, kMaxDevices> g_caches{};
std::atomic<int> g_cache_count{0};
// The device whose cache freed last: small ops free on one device, whose cache is then searched first.
std::atomic<int> g_last_freed{0};

template <class Fn>
bool onOwningCache(void* ptr, Fn&& fn) {
  const int n = g_cache_count.load(std::memory_order_acquire);
  const int hint = g_last_freed.load(std::memory_order_relaxed);
  if (hint < n && fn(*g_caches[hint].load(std::memory_order_acquire))) return true;
  for (int i = 0; i < n; ++i) {
    if (i != hint && fn(*g_caches[i].load(std::memory_order_acquire))) {
      g_last_freed.store(i, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

bool freeLive(void* ptr) {
  return onOwningCache(ptr, [ptr](DeviceCache& cache) { return cache.freeIfLive(ptr); });
}
} // namespace

CachingAllocator& cachingAllocator() {
  static CachingAllocator* instance = new CachingAllocator();  // leaked: tensors may outlive static teardown
  return *instance;
}

namespace {
void deleteDevicePtr(void* ptr) {
  if (ptr == nullptr) return;
  if (!freeLive(ptr)) {
    TORCH_WARN("neuron: ignoring free of ", ptr, ", which the caching allocator does not own (double free?)");
  }
}
} // namespace

CachingAllocator::CachingAllocator() {
  for (int i = 0; i < kMaxDevices; ++i) caches_.emplace_back(nullptr);
}

CachingAllocator::~CachingAllocator() = default;

DeviceCache& CachingAllocator::deviceCache(c10::DeviceIndex device) {
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "neuron: invalid device index ", static_cast<int>(device));
  auto& slot = caches_[device];
  if (C10_UNLIKELY(!slot)) {
    static std::mutex create_mutex;
    std::lock_guard<std::mutex> lock(create_mutex);
    if (!slot) {
      checkDeviceIndex(device);
      slot = std::make_unique<DeviceCache>(device);
      const int index = g_cache_count.load(std::memory_order_relaxed);
      g_caches[index].store(slot.get(), std::memory_order_release);
      g_cache_count.store(index + 1, std::memory_order_release);
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
  void* ptr = deviceCache(device).malloc(stream_index, nbytes)->ptr;
  return c10::DataPtr(ptr, ptr, &deleteDevicePtr, dev);
}

c10::DataPtr CachingAllocator::allocate(size_t nbytes) {
  const int device = currentDeviceIndex();
  return allocateOn(static_cast<c10::DeviceIndex>(device), currentStreamIndex(device), nbytes);
}

c10::DeleterFnPtr CachingAllocator::raw_deleter() const { return &deleteDevicePtr; }

void CachingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  // Device to device, in order on the current stream (on nrt the addresses are not host memory).
  Runtime& rt = runtime();
  const int device = rt.deviceOf(dest);
  TORCH_CHECK(device >= 0, "neuron: Allocator::copy_data: ", dest, " is not neuron device memory");
  rt.copyDeviceToDevice(dest, src, count, *rt.queue(device, currentStreamIndex(device)), /*async=*/false);
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
  // Not ours (e.g. memory adopted from the host): nothing to protect.
  void* p = ptr.get();
  const int s = static_cast<int>(stream.id());
  onOwningCache(p, [p, s](DeviceCache& cache) { return cache.recordStreamIfLive(p, s); });
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

bool CachingAllocator::freeIfLive(void* ptr) { return ptr != nullptr && freeLive(ptr); }

bool CachingAllocator::owns(const c10::DataPtr& ptr) const { return ptr.get_deleter() == &deleteDevicePtr; }

} // namespace torchneuron
