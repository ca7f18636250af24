// Static-init registration of the neuron device's allocator, pinned-memory allocator and hooks.
#include <c10/core/Allocator.h>

#include "allocator/CachingAllocator.h"
#include "device/Hooks.h"
#include "device/PinnedAllocator.h"

namespace {
const bool g_registered = [] {
  c10::SetAllocator(c10::DeviceType::PrivateUse1, &torchneuron::cachingAllocator());
  at::setHostAllocator(c10::DeviceType::PrivateUse1, &torchneuron::pinnedAllocator());
  at::RegisterPrivateUse1HooksInterface(new torchneuron::Hooks());
  return true;
}();
} // namespace
