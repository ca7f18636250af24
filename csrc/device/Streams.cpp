#include "device/Streams.h"

#include <c10/util/Exception.h>

#include <array>
#include <atomic>

#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
constexpr int kMaxDevices = 128;
thread_local c10::DeviceIndex t_current_device = 0;
// Per thread and device: the current stream index (default stream when never set).
thread_local std::array<int8_t, kMaxDevices> t_current_stream{};
std::array<std::atomic<uint32_t>, kMaxDevices> g_pool_counter{};
} // namespace

void checkDeviceIndex(c10::DeviceIndex index) {
  Runtime& rt = runtime();
  int count = rt.deviceCount();
  TORCH_CHECK(index >= 0 && index < count, "neuron: invalid device index ", static_cast<int>(index),
              "; there are ", count, " neuron device(s) (indices 0..", count - 1, "). ",
              rt.hostAddressable() ? "Set TORCHNEURON_SIM_DEVICES to simulate more."
                                   : "libnrt gives this process the NeuronCores NEURON_RT_VISIBLE_CORES / "
                                     "NEURON_RT_NUM_CORES select.");
}

c10::DeviceIndex currentDevice() { return t_current_device; }

void setCurrentDevice(c10::DeviceIndex index) {
  checkDeviceIndex(index);
  t_current_device = index;
}

c10::Stream currentStream(c10::DeviceIndex index) {
  if (index < 0) index = t_current_device;
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index),
                     static_cast<c10::StreamId>(t_current_stream[index]));
}

c10::Stream defaultStream(c10::DeviceIndex index) {
  if (index < 0) index = t_current_device;
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), 0);
}

c10::Stream streamFromPool(c10::DeviceIndex index) {
  if (index < 0) index = t_current_device;
  checkDeviceIndex(index);
  int pool = runtime().streamsPerDevice() - 1;
  auto id = 1 + static_cast<int>(g_pool_counter[index].fetch_add(1) % pool);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), id);
}

void setCurrentStream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "neuron: expected a neuron stream, got ",
              stream);
  t_current_stream[stream.device_index()] = static_cast<int8_t>(stream.id());
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
