// Chooses and owns the process's Runtime (TORCHNEURON_RUNTIME=auto|sim|nrt, read in torchneuron/_env.py).
#include <c10/util/Exception.h>

#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "runtime/NrtLoader.h"
#include "runtime/Runtime.h"
#include "runtime/SimRuntime.h"

namespace torchneuron {

namespace {
RuntimeConfig g_config;
std::once_flag g_fork_handler_once;
std::mutex g_mutex;
// Leaked on purpose: queue worker threads and tensors freed during interpreter teardown may still use it.
Runtime* g_runtime = nullptr;
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_bad_fork{false};

void markChildAfterFork() {
  // The parent's queues, worker threads and device memory do not exist in the child.
  if (g_initialized.load()) {
    g_bad_fork.store(true);
  }
}

std::unique_ptr<Runtime> createRuntime(const RuntimeConfig& config) {
  const TargetInfo& target = lookupTarget(config.target);
  if (config.kind == "nrt") {
    NrtProbe probe = probeLibnrt();
    TORCH_CHECK(probe.loaded, "neuron: TORCHNEURON_RUNTIME=nrt, but libnrt could not be loaded (", probe.error,
                "). On a Trainium host install the Neuron runtime (aws-neuronx-runtime-lib, /opt/aws/neuron/lib) "
                "and make sure libnrt.so.1 is on the loader path; elsewhere use TORCHNEURON_RUNTIME=sim or auto.");
    TORCH_CHECK(false, "neuron: libnrt was found at ", probe.path,
                ", but this torchneuron build has no nrt runtime yet (the runtime seam exists; the libnrt-backed "
                "runtime is planned work, see the README support table). Use TORCHNEURON_RUNTIME=sim or auto.");
  }
  TORCH_CHECK(config.kind == "auto" || config.kind == "sim", "neuron: TORCHNEURON_RUNTIME='", config.kind,
              "' is not one of auto, sim, nrt");
  // auto: nrt would be chosen only when libnrt loads, reports a core, and an nrt runtime is built in.
  int devices = config.devices > 0 ? config.devices : target.logical_cores;
  TORCH_CHECK(devices <= 127, "neuron: ", devices, " devices requested; PyTorch device indices stop at 127");
  int64_t hbm = config.hbm_bytes > 0 ? config.hbm_bytes : target.chip_hbm_bytes / target.logical_cores;
  return std::make_unique<SimRuntime>(target, devices, hbm);
}
} // namespace

void configureRuntime(const RuntimeConfig& config) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_runtime) {
    g_config = config;
  }
  setLaunchBlocking(config.launch_blocking);
}

const RuntimeConfig& runtimeConfig() { return g_config; }

bool runtimeInitialized() { return g_initialized.load(std::memory_order_acquire) && !g_bad_fork.load(); }

Runtime& runtime() {
  if (C10_LIKELY(g_initialized.load(std::memory_order_acquire))) {
    if (C10_UNLIKELY(g_bad_fork.load(std::memory_order_relaxed))) {
      TORCH_CHECK(false,
                  "neuron: cannot use the neuron device in a forked subprocess: the parent process had already "
                  "initialised it. Use the 'spawn' start method: torch.multiprocessing.set_start_method('spawn') "
                  "(or multiprocessing.get_context('spawn')).");
    }
    return *g_runtime;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_runtime) {
    std::call_once(g_fork_handler_once, [] { pthread_atfork(nullptr, nullptr, &markChildAfterFork); });
    g_runtime = createRuntime(g_config).release();
    g_initialized.store(true, std::memory_order_release);
  }
  return *g_runtime;
}

bool inBadFork() { return g_bad_fork.load(); }

int deviceCountNoThrow() noexcept {
  try {
    if (g_bad_fork.load()) {
      return 0;
    }
    if (g_initialized.load(std::memory_order_acquire)) {
      return g_runtime->deviceCount();
    }
    // Counting devices must not start worker threads or allocate: compute it from the configuration.
    const TargetInfo& target = lookupTarget(g_config.target);
    if (g_config.kind == "nrt") {
      return 0;  // no nrt runtime is built in yet, so it has no usable devices
    }
    return g_config.devices > 0 ? g_config.devices : target.logical_cores;
  } catch (...) {
    return 0;
  }
}

} // namespace torchneuron
