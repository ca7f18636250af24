#pragma once
// Device memory that something other than the caching allocator allocated: on the sim, XLA:CPU's output
// buffers (adopted as neuron tensors) and a compiled program's working set while it runs. A Trn host holds
// both in HBM, so they count like any allocation: against the device limit (the cache is released and the
// charge retried before torch.OutOfMemoryError, with eager's message), in memory_allocated / memory_stats
// (each charge is a segment and a block of its own, in the pool its size would use) and in the profiler.
#include <c10/core/Device.h>

#include <cstddef>

namespace torchneuron {

// Charges `nbytes` held at `ptr` (names the memory to the profiler; may be null) to `device`, or throws
// torch.OutOfMemoryError. Each charge is given back exactly once, with the same arguments.
void chargeExternalMemory(c10::DeviceIndex device, const void* ptr, size_t nbytes);
void releaseExternalMemory(c10::DeviceIndex device, const void* ptr, size_t nbytes);

} // namespace torchneuron
