#pragma once
// What ATen asks of the PrivateUse1 backend outside of any op: lazy initialisation, availability, default
// generators, pinned memory, pointer ownership and storage resizing.
#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace torchneuron {

struct Hooks final : public at::PrivateUse1HooksInterface {
  // at::globalContext().lazyInitDevice(PrivateUse1) calls this once; it may throw (bad fork, bad config).
  void init() const override;
  bool isBuilt() const override { return true; }
  // Must not throw: PyTorch probes availability from many places.
  bool isAvailable() const override;
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override;
  c10::DeviceIndex deviceCount() const override;
  void setCurrentDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex getCurrentDevice() const override;
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override;
  at::Generator getNewGenerator(c10::DeviceIndex device_index = -1) const override;

  at::Device getDeviceFromPtr(void* data) const override;
  bool isPinnedPtr(const void* data) const override;
  at::Allocator* getPinnedMemoryAllocator() const override;
  // storage.resize_() on a neuron storage: reallocate on the same device and keep the contents.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override;
};

} // namespace torchneuron
