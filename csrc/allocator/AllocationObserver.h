#pragma once
// A hook the caching allocator calls on every allocation (delta > 0, bytes) and free of device memory, on the
// thread that made it. The profiler installs one for the length of a recording session
// (profiler/DeviceActivity.cpp) to count what a host kernel kept as its output; the allocator does not know
// the profiler. Outside a session there is none, and an allocation pays one relaxed load to find that out.
#include <cstdint>

namespace torchneuron {

using AllocationObserver = void (*)(int64_t delta);
void setAllocationObserver(AllocationObserver observer);  // nullptr: none

} // namespace torchneuron
