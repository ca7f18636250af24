#include "device/GuardImpl.h"

#include "allocator/CachingAllocator.h"
#include "device/Events.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron {

c10::Device GuardImpl::exchangeDevice(c10::Device d) const {
  auto old = getDevice();
  if (d.index() != old.index()) setDevice(d);
  return old;
}

c10::Device GuardImpl::getDevice() const { return c10::Device(static_type, currentDevice()); }

void GuardImpl::setDevice(c10::Device d) const {
  TORCH_CHECK(d.type() == static_type, "neuron: expected a neuron device, got ", d);
  setCurrentDevice(d.index());
}

void GuardImpl::uncheckedSetDevice(c10::Device d) const noexcept {
  // A device guard's exit restores the device it found, most often the current one: nothing to set, and the
  // check (whose errors this function swallows) need not run on every guarded op.
  if (d.index() == currentDevice()) return;
  try {
    setCurrentDevice(d.index());
  } catch (...) {
  }
}

c10::Stream GuardImpl::getStream(c10::Device d) const { return currentStream(d.index()); }

c10::Stream GuardImpl::getDefaultStream(c10::Device d) const { return defaultStream(d.index()); }

c10::Stream GuardImpl::getStreamFromGlobalPool(c10::Device d, bool) const { return streamFromPool(d.index()); }

c10::Stream GuardImpl::getNewStream(c10::Device d, int) const { return streamFromPool(d.index()); }

c10::Stream GuardImpl::exchangeStream(c10::Stream s) const {
  auto old = currentStream(s.device_index());
  setCurrentStream(s);
  return old;
}

void GuardImpl::destroyEvent(void* event, const c10::DeviceIndex) const noexcept {
  delete static_cast<NeuronEvent*>(event);
}

void GuardImpl::record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
                       const c10::EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "neuron: event device ",
              static_cast<int>(device_index), " does not match stream ", stream);
  if (*event == nullptr) {
    auto* e = new NeuronEvent();
    // As on CUDA, BACKEND_DEFAULT is the timing-enabled flavour (torch.Event(enable_timing=True)).
    e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
    *event = e;
  }
  recordEvent(*static_cast<NeuronEvent*>(*event), stream);
}

void GuardImpl::block(void* event, const c10::Stream& stream) const {
  if (event == nullptr) return;
  blockStreamOnEvent(*static_cast<NeuronEvent*>(event), stream);
}

bool GuardImpl::queryEvent(void* event) const {
  return event == nullptr || torchneuron::queryEvent(*static_cast<NeuronEvent*>(event));
}

void GuardImpl::synchronizeEvent(void* event) const {
  if (event != nullptr) torchneuron::synchronizeEvent(*static_cast<NeuronEvent*>(event));
}

double GuardImpl::elapsedTime(void* event1, void* event2, const c10::DeviceIndex) const {
  TORCH_CHECK(event1 && event2, "neuron: elapsed_time needs two recorded events");
  return elapsedMilliseconds(*static_cast<NeuronEvent*>(event1), *static_cast<NeuronEvent*>(event2));
}

c10::DeviceIndex GuardImpl::deviceCount() const noexcept {
  return static_cast<c10::DeviceIndex>(deviceCountNoThrow());
}

c10::DeviceCapability GuardImpl::getDeviceCapability(c10::Device) const {
  c10::DeviceCapability cap;  // every dtype can be stored (float64 is computed in float32, see docs/eager.md)
  auto& types = cap.capability_data.supported_scalar_types;
  // Quantized tensors have no neuron kernels.
  types.has_QInt8 = types.has_QUInt8 = types.has_QInt32 = types.has_QUInt4x2 = types.has_QUInt2x4 = 0;
  return cap;
}

bool GuardImpl::queryStream(const c10::Stream& stream) const { return queueOf(stream)->idle(); }

void GuardImpl::synchronizeStream(const c10::Stream& stream) const { queueOf(stream)->drain(); }

void GuardImpl::synchronizeDevice(const c10::DeviceIndex device_index) const {
  runtime().synchronize(device_index < 0 ? currentDevice() : device_index);
}

void GuardImpl::recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const {
  cachingAllocator().recordStream(data_ptr, stream);
}

} // namespace torchneuron
