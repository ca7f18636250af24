#include "aten/native/HostOutputAllocator.h"

#include <c10/core/CPUAllocator.h>

#include <atomic>

#include "allocator/CachingAllocator.h"
#include "aten/native/HostThreads.h"

namespace torchneuron {

namespace {
c10::DeleterFnPtr g_cpu_raw_deleter = nullptr;
std::atomic<c10::Allocator*> g_registered{nullptr};

// raw_allocate()/raw_deallocate() users (oneDNN scratch buffers, ...) free through raw_deleter(), possibly
// after the capture scope ended: route device blocks back to the caching allocator, the rest to the CPU's.
void rawDeleteHostOrDevice(void* ptr) {
  if (!cachingAllocator().freeIfLive(ptr) && g_cpu_raw_deleter != nullptr) g_cpu_raw_deleter(ptr);
}

class HostOrDeviceAllocator final : public c10::Allocator {
 public:
  explicit HostOrDeviceAllocator(c10::Allocator* cpu) : cpu_(cpu) {}

  c10::DataPtr allocate(size_t nbytes) override {
    const HostThreadState* thread = hostThreadStateIfAny();
    if (thread == nullptr || thread->capture_device < 0) {
      return cpu_->allocate(nbytes);
    }
    c10::DataPtr ptr = cachingAllocator().allocateOn(static_cast<c10::DeviceIndex>(thread->capture_device),
                                                     thread->capture_stream, nbytes);
    ptr.unsafe_set_device(c10::Device(c10::DeviceType::CPU));  // the host kernel must see CPU memory
    return ptr;
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return cpu_->raw_deleter() != nullptr ? &rawDeleteHostOrDevice : nullptr;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    cpu_->copy_data(dest, src, count);
  }

 private:
  c10::Allocator* cpu_;
};

// Registered on the first host kernel (never at load: a process that does not use the neuron device keeps
// PyTorch's CPU allocator untouched), above the default CPU allocator's priority; the allocator found then
// stays the delegate. CPU tensors allocated before it was registered free through their own deleters.
HostOrDeviceAllocator* installed() {
  static HostOrDeviceAllocator* instance = [] {
    g_cpu_raw_deleter = c10::GetCPUAllocator()->raw_deleter();
    auto* a = new HostOrDeviceAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(a, /*priority=*/1);
    g_registered.store(a);
    return a;
  }();
  return instance;
}
} // namespace

CaptureOutputsOnDevice::CaptureOutputsOnDevice(c10::DeviceIndex device, int stream_index)
    : CaptureOutputsOnDevice(hostThreadState(), device, stream_index) {}

CaptureOutputsOnDevice::CaptureOutputsOnDevice(HostThreadState& thread, c10::DeviceIndex device, int stream_index)
    : thread_(thread), prev_device_(thread.capture_device), prev_stream_(thread.capture_stream) {
  (void)installed();
  thread.capture_device = device;
  thread.capture_stream = stream_index;
}

CaptureOutputsOnDevice::~CaptureOutputsOnDevice() {
  thread_.capture_device = prev_device_;
  thread_.capture_stream = prev_stream_;
}

c10::Allocator* hostOutputAllocator() { return installed(); }

bool capturesCpuAllocations() {
  c10::Allocator* ours = g_registered.load();
  return ours != nullptr && c10::GetCPUAllocator() == ours;
}

void retagAsDevice(c10::DataPtr& ptr, c10::DeviceIndex device) {
  ptr.unsafe_set_device(c10::Device(c10::DeviceType::PrivateUse1, device));
}

} // namespace torchneuron
