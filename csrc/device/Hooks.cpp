#include "device/Hooks.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include "allocator/CachingAllocator.h"
#include "device/Generator.h"
#include "device/PinnedAllocator.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron {

void Hooks::init() const { runtime(); }

bool Hooks::isAvailable() const { return deviceCountNoThrow() > 0; }

bool Hooks::hasPrimaryContext(c10::DeviceIndex) const { return runtimeInitialized(); }

c10::DeviceIndex Hooks::deviceCount() const { return static_cast<c10::DeviceIndex>(deviceCountNoThrow()); }

void Hooks::setCurrentDevice(c10::DeviceIndex device) const { torchneuron::setCurrentDevice(device); }

c10::DeviceIndex Hooks::getCurrentDevice() const { return currentDevice(); }

c10::DeviceIndex Hooks::exchangeDevice(c10::DeviceIndex device) const {
  auto old = currentDevice();
  if (device >= 0 && device != old) torchneuron::setCurrentDevice(device);
  return old;
}

c10::DeviceIndex Hooks::maybeExchangeDevice(c10::DeviceIndex device) const { return exchangeDevice(device); }

const at::Generator& Hooks::getDefaultGenerator(c10::DeviceIndex device_index) const {
  return defaultGenerator(device_index);
}

at::Generator Hooks::getNewGenerator(c10::DeviceIndex device_index) const { return newGenerator(device_index); }

at::Device Hooks::getDeviceFromPtr(void* data) const {
  int device = runtime().deviceOf(data);
  TORCH_CHECK(device >= 0, "neuron: pointer ", data, " is not neuron device memory");
  return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
}

bool Hooks::isPinnedPtr(const void* data) const { return pinnedAllocator().isPinned(data); }

at::Allocator* Hooks::getPinnedMemoryAllocator() const { return &pinnedAllocator(); }

void Hooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  auto* impl = storage.unsafeGetStorageImpl();
  TORCH_CHECK(impl->resizable(), "neuron: trying to resize a storage that is not resizable");
  c10::DeviceIndex device = impl->device().index();
  c10::DataPtr fresh = cachingAllocator().allocateOn(device, static_cast<int>(currentStream(device).id()), newsize);
  size_t keep = std::min(newsize, impl->nbytes());
  if (keep > 0) {
    Runtime& rt = runtime();
    rt.copyDeviceToDevice(fresh.get(), impl->data(), keep, *currentQueue(device), /*async=*/false);
  }
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(newsize);
}

} // namespace torchneuron
