#pragma once

namespace torchneuron {

// Called before every host kernel: the first call on a thread decides how many intra-op threads that
// thread's host kernels may use (see HostThreads.cpp).
void prepareHostKernelThread();

} // namespace torchneuron
