#include "device/PinnedAllocator.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace torchneuron {

namespace {
std::mutex g_mutex;
std::map<uintptr_t, size_t> g_regions;  // base -> bytes
at::HostStats g_stats;

void freePinned(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_regions.find(reinterpret_cast<uintptr_t>(ptr));
    if (it != g_regions.end()) {
      g_stats.active_requests.decrease(1);
      g_stats.active_bytes.decrease(it->second);
      g_stats.allocations.decrease(1);
      g_stats.allocated_bytes.decrease(it->second);
      g_stats.num_host_free += 1;
      g_regions.erase(it);
    }
  }
  std::free(ptr);
}
} // namespace

PinnedAllocator& pinnedAllocator() {
  static PinnedAllocator* instance = new PinnedAllocator();
  return *instance;
}

at::DataPtr PinnedAllocator::allocate(size_t nbytes) {
  c10::Device cpu(c10::DeviceType::CPU);
  if (nbytes == 0) return at::DataPtr(nullptr, nullptr, &freePinned, cpu);
  size_t rounded = (nbytes + 4095) / 4096 * 4096;
  void* ptr = std::aligned_alloc(4096, rounded);
  TORCH_CHECK_WITH(OutOfMemoryError, ptr != nullptr, "neuron: could not allocate ", nbytes,
                   " bytes of pinned host memory");
  std::lock_guard<std::mutex> lock(g_mutex);
  g_regions.emplace(reinterpret_cast<uintptr_t>(ptr), nbytes);
  g_stats.active_requests.increase(1);
  g_stats.active_bytes.increase(nbytes);
  g_stats.allocations.increase(1);
  g_stats.allocated_bytes.increase(nbytes);
  g_stats.num_host_alloc += 1;
  return at::DataPtr(ptr, ptr, &freePinned, cpu);
}

c10::DeleterFnPtr PinnedAllocator::raw_deleter() const { return &freePinned; }

void PinnedAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  std::memcpy(dest, src, count);
}

at::HostStats PinnedAllocator::get_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}

void PinnedAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto* s : {&g_stats.active_requests, &g_stats.active_bytes, &g_stats.allocations, &g_stats.allocated_bytes}) {
    s->reset_accumulated();
  }
  g_stats.num_host_alloc = 0;
  g_stats.num_host_free = 0;
}

void PinnedAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto* s : {&g_stats.active_requests, &g_stats.active_bytes, &g_stats.allocations, &g_stats.allocated_bytes}) {
    s->reset_peak();
  }
}

bool PinnedAllocator::isPinned(const void* ptr) const {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_regions.upper_bound(addr);
  if (it == g_regions.begin()) return false;
  --it;
  return addr < it->first + it->second;
}

} // namespace torchneuron
