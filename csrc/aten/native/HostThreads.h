#pragma once
#include <ATen/core/List.h>
#include <c10/macros/Macros.h>

#include <optional>

#include "aten/native/HostAlias.h"

namespace torchneuron {

// What the host path keeps per thread, in one place: each thread_local a shared library touches costs a
// __tls_get_addr call, and a small op paid nine of them when each file kept its own.
struct HostThreadState {
  int capture_device = -1;  // CaptureOutputsOnDevice: where outputs go (< 0: not capturing)
  int capture_stream = 0;
  bool prepared = false;  // prepareHostKernelThread has run on this thread
  bool index_list_busy = false;
  c10::List<std::optional<at::Tensor>> index_list;  // the host form of an index list (HostKernel.h)
  AliasCache aliases;
};

namespace detail {
// A plain pointer (__thread: no initialisation guard on access); the state is made on first use and freed at
// thread exit.
extern __thread HostThreadState* t_host_state;
HostThreadState& makeHostThreadState();
void prepareHostKernelThreadOnce(HostThreadState& state);
} // namespace detail

inline HostThreadState& hostThreadState() {
  HostThreadState* state = detail::t_host_state;
  return C10_LIKELY(state != nullptr) ? *state : detail::makeHostThreadState();
}
// nullptr on a thread that has no state (never ran a host kernel, or is exiting).
inline HostThreadState* hostThreadStateIfAny() { return detail::t_host_state; }

// Called before every host kernel: the first call on a thread decides how many intra-op threads that
// thread's host kernels may use (see HostThreads.cpp).
inline void prepareHostKernelThread(HostThreadState& state) {
  if (C10_UNLIKELY(!state.prepared)) detail::prepareHostKernelThreadOnce(state);
}

// Intra-op threads for host kernels on autograd's device threads (0: PyTorch's setting); threads that
// already ran a host kernel keep what they got.
void setAutogradThreadIntraOpThreads(int n);

} // namespace torchneuron
