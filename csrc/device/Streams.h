#pragma once
// Device selection and streams as PyTorch sees them: a thread-local current device and, per device, a
// thread-local current stream (kept in runtime/CurrentDevice.h, below the allocator). A c10::Stream id is the
// index of the runtime queue it maps to (0 = the default stream, 1.. = the pool handed out round-robin, as
// torch.cuda does).
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <memory>

#include "runtime/CurrentDevice.h"
#include "runtime/Queue.h"

namespace torchneuron {

inline c10::DeviceIndex currentDevice() { return static_cast<c10::DeviceIndex>(currentDeviceIndex()); }
void setCurrentDevice(c10::DeviceIndex index);  // validates the index against the runtime

c10::Stream currentStream(c10::DeviceIndex index);
c10::Stream defaultStream(c10::DeviceIndex index);
c10::Stream streamFromPool(c10::DeviceIndex index);
void setCurrentStream(const c10::Stream& stream);

// The runtime queue behind a stream.
std::shared_ptr<Queue> queueOf(const c10::Stream& stream);
inline std::shared_ptr<Queue> currentQueue(c10::DeviceIndex index) { return queueOf(currentStream(index)); }
// The same queue by reference, for the per-op path: no shared_ptr copy (two atomic read-modify-writes) and no
// runtime call once looked up. The runtime makes its queues up front and keeps them for the process.
Queue& queueRef(c10::DeviceIndex index, int stream_index);

} // namespace torchneuron
