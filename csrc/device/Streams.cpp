#include "device/Streams.h"

#include <c10/util/Exception.h>

#include <array>
#include <atomic>

#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
std::array<std::atomic<uint32_t>, kMaxDevices> g_pool_counter{};
} // namespace

void setCurrentDevice(c10::DeviceIndex index) {
  checkDeviceIndex(index);
  setCurrentDeviceIndex(index);
}

c10::Stream currentStream(c10::DeviceIndex index) {
  if (index < 0) index = currentDevice();
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index),
                     static_cast<c10::StreamId>(currentStreamIndex(index)));
}

c10::Stream defaultStream(c10::DeviceIndex index) {
  if (index < 0) index = currentDevice();
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), 0);
}

c10::Stream streamFromPool(c10::DeviceIndex index) {
  if (index < 0) index = currentDevice();
  checkDeviceIndex(index);
  int pool = runtime().streamsPerDevice() - 1;
  auto id = 1 + static_cast<int>(g_pool_counter[index].fetch_add(1) % pool);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), id);
}

void setCurrentStream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "neuron: expected a neuron stream, got ",
              stream);
  setCurrentStreamIndex(stream.device_index(), static_cast<int>(stream.id()));
}

std::shared_ptr<Queue> queueOf(const c10::Stream& stream) {
  return runtime().queue(stream.device_index(), static_cast<int>(stream.id()));
}

namespace {
std::array<std::array<std::atomic<Queue*>, kStreamsPerDevice>, kMaxDevices> g_queues{};
} // namespace

Queue& queueRef(c10::DeviceIndex index, int stream_index) {
  if (C10_LIKELY(index >= 0 && index < kMaxDevices && stream_index >= 0 && stream_index < kStreamsPerDevice)) {
    std::atomic<Queue*>& slot = g_queues[index][stream_index];
    Queue* queue = slot.load(std::memory_order_acquire);
    if (C10_LIKELY(queue != nullptr)) return *queue;
    queue = runtime().queue(index, stream_index).get();  // validates the indices the first time
    slot.store(queue, std::memory_order_release);
    return *queue;
  }
  return *runtime().queue(index, stream_index);  // out of range: the runtime's error
}

} // namespace torchneuron
