#include "runtime/SimRuntime.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace torchneuron {

namespace {
// Device allocations are page aligned, like HBM segments, so every dtype and DLPack consumer is happy.
constexpr size_t kAlignment = 4096;
} // namespace

SimRuntime::SimRuntime(const TargetInfo& target, int devices, int64_t hbm_bytes_per_device)
    : target_(target),
      devices_(devices),
      hbm_bytes_(hbm_bytes_per_device),
      in_use_(devices, 0),
      queues_(makeQueues(devices, kStreamsPerDevice)) {}

SimRuntime::~SimRuntime() = default;

void SimRuntime::checkDevice(int device) const {
  TORCH_CHECK(device >= 0 && device < devices_, "neuron: invalid device index ", device, "; this ",
              target_.name, " simulator has ", devices_, " device(s) (set TORCHNEURON_SIM_DEVICES for more)");
}

int64_t SimRuntime::capacity(int device) const {
  checkDevice(device);
  return hbm_bytes_;
}

int64_t SimRuntime::bytesInUse(int device) const {
  checkDevice(device);
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_[device];
}

void* SimRuntime::allocate(int device, size_t bytes) {
  checkDevice(device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > static_cast<uint64_t>(hbm_bytes_ - in_use_[device])) {  // unsigned: bytes may exceed 2**63
      return nullptr;
    }
    in_use_[device] += static_cast<int64_t>(bytes);
  }
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  std::lock_guard<std::mutex> lock(mutex_);
  if (ptr == nullptr) {
    in_use_[device] -= static_cast<int64_t>(bytes);  // host RAM exhausted: report like a full device
    return nullptr;
  }
  segments_.emplace(reinterpret_cast<uintptr_t>(ptr), std::make_pair(bytes, device));
  return ptr;
}

void SimRuntime::free(int device, void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = segments_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == segments_.end()) {
    TORCH_WARN("neuron: ignoring free of ", ptr, " on neuron:", device, ", which this runtime did not allocate");
    return;
  }
  in_use_[it->second.second] -= static_cast<int64_t>(it->second.first);
  segments_.erase(it);
  std::free(ptr);
}

int SimRuntime::deviceOf(const void* ptr) const {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = segments_.upper_bound(addr);
  if (it == segments_.begin()) {
    return -1;
  }
  --it;
  return addr < it->first + std::max<size_t>(it->second.first, 1) ? it->second.second : -1;
}

std::shared_ptr<Queue> SimRuntime::queue(int device, int stream_index) {
  checkDevice(device);
  TORCH_CHECK(stream_index >= 0 && stream_index < kStreamsPerDevice, "neuron: invalid stream index ", stream_index);
  return queues_[device][stream_index];
}

void SimRuntime::copy(void* dst, const void* src, size_t n, Queue& q, bool async, std::function<void()> on_done) {
  if (n == 0) {
    if (on_done) on_done();
    return;
  }
  q.submit(
      [dst, src, n, on_done = std::move(on_done)] {
        std::memcpy(dst, src, n);
        if (on_done) on_done();
      },
      async);
}

void SimRuntime::copyHostToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                                  std::function<void()> on_done) {
  copy(dst, src, n, q, async, std::move(on_done));
}

void SimRuntime::copyDeviceToHost(void* dst, const void* src, size_t n, Queue& q, bool async,
                                  std::function<void()> on_done) {
  copy(dst, src, n, q, async, std::move(on_done));
}

void SimRuntime::copyDeviceToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                                    std::function<void()> on_done) {
  copy(dst, src, n, q, async, std::move(on_done));
}

void SimRuntime::memset(void* dst, int value, size_t n, Queue& q) {
  q.submit([dst, value, n] { std::memset(dst, value, n); }, /*async=*/false);
}

void SimRuntime::synchronize(int device) {
  checkDevice(device);
  for (auto& q : queues_[device]) {
    q->drain();
  }
}

} // namespace torchneuron
