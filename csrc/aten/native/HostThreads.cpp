// On the simulator, host kernels run on whichever thread calls them. PyTorch's autograd engine runs a
// device's backward in its own thread ("pt_autograd_<n>"), and with OpenMP every such thread leads its own
// thread team. On a small machine the backward team and the forward (main-thread) team then fight over the
// same cores, and OpenMP's spin-waiting turns that into ~10x slower kernels (a 32x64x32 bmm forward+backward:
// ~7.7 ms instead of ~0.7 ms on two cores). A real NeuronCore has no such problem: the autograd thread only
// launches work. So autograd's neuron threads get TORCHNEURON_AUTOGRAD_THREADS intra-op threads (default 1:
// no second team; read by torchneuron/_env.py and passed in at import); other threads keep PyTorch's setting.
#include "aten/native/HostThreads.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>

namespace torchneuron {

namespace {
using SetThreadsFn = void (*)(int);
using MklSetLocalFn = int (*)(int);

bool isAutogradDeviceThread() {
  char name[32] = {0};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return false;
  return std::strncmp(name, "pt_autograd_", 12) == 0;
}

std::atomic<int> g_autograd_threads{1};  // 0: leave PyTorch's setting alone

// Both libraries are already loaded by torch; RTLD_NOLOAD only finds them (never loads a second copy).
template <typename Fn>
Fn symbolIn(const char* library, const char* symbol) {
  void* handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
  return handle == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(handle, symbol));
}

void limitThisThread(int n) {
  // ATen initialises a thread's OpenMP/MKL thread counts lazily, on its first parallel call, from the global
  // setting; let that happen now (inside libtorch, whose once-per-thread flag counts) so it cannot undo ours.
  (void)at::get_num_threads();
  // OpenMP's thread count is per thread (an ICV of the calling thread); MKL's local setting likewise.
  if (auto set = symbolIn<SetThreadsFn>("libgomp.so.1", "omp_set_num_threads")) set(n);
  // MKL's C entry point (the lowercase name is the Fortran one, which takes a pointer)
  if (auto set = symbolIn<MklSetLocalFn>("libtorch_cpu.so", "MKL_Set_Num_Threads_Local")) set(n);
}
} // namespace

namespace detail {
__thread HostThreadState* t_host_state = nullptr;

HostThreadState& makeHostThreadState() {
  struct Owner {
    std::unique_ptr<HostThreadState> state = std::make_unique<HostThreadState>();
    ~Owner() { t_host_state = nullptr; }
  };
  thread_local Owner owner;  // frees the state at thread exit
  t_host_state = owner.state.get();
  return *t_host_state;
}

void prepareHostKernelThreadOnce(HostThreadState& state) {
  state.prepared = true;
  if (!isAutogradDeviceThread()) return;
  if (int n = g_autograd_threads.load(std::memory_order_relaxed); n > 0) limitThisThread(n);
}
} // namespace detail

void setAutogradThreadIntraOpThreads(int n) {
  TORCH_CHECK(n >= 0, "neuron: the intra-op thread count of autograd's device threads must be >= 0, got ", n);
  g_autograd_threads.store(n);
}

} // namespace torchneuron
