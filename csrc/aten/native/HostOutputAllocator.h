#pragma once
// Lets a host (CPU) kernel that runs on the simulator allocate its outputs directly in neuron device memory.
// It wraps the process's CPU allocator from the first host kernel on (never at load): inside a
// CaptureOutputsOnDevice scope, allocations made by the calling thread come from the neuron caching allocator
// (tagged CPU so the kernel accepts them) and are handed to the result as device memory afterwards, with no
// copy; everywhere else it is the CPU allocator.
#include <c10/core/Allocator.h>

namespace torchneuron {

struct HostThreadState;

class CaptureOutputsOnDevice {
 public:
  CaptureOutputsOnDevice(c10::DeviceIndex device, int stream_index);
  // For the calling thread's state, when the caller already has it (HostCall).
  CaptureOutputsOnDevice(HostThreadState& thread, c10::DeviceIndex device, int stream_index);
  ~CaptureOutputsOnDevice();
  CaptureOutputsOnDevice(const CaptureOutputsOnDevice&) = delete;
  CaptureOutputsOnDevice& operator=(const CaptureOutputsOnDevice&) = delete;

 private:
  HostThreadState& thread_;
  int prev_device_;
  int prev_stream_;
};

// The allocator host aliases of neuron storages resize through (so out= kernels can grow device outputs).
c10::Allocator* hostOutputAllocator();

// Whether the process's CPU allocator is this wrapper (false until the first host kernel ran).
bool capturesCpuAllocations();

// Retags a DataPtr produced inside a capture scope as neuron memory of `device`.
void retagAsDevice(c10::DataPtr& ptr, c10::DeviceIndex device);

} // namespace torchneuron
