#pragma once

namespace torchneuron {

// Called before every host kernel: the first call on a thread decides how many intra-op threads that
// thread's host kernels may use (see HostThreads.cpp).
void prepareHostKernelThread();

// Intra-op threads for host kernels on autograd's device threads (0: PyTorch's setting); threads that
// already ran a host kernel keep what they got.
void setAutogradThreadIntraOpThreads(int n);

} // namespace torchneuron
