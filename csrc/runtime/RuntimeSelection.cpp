// Chooses and owns the process's Runtime (TORCHNEURON_RUNTIME=auto|sim|nrt, read in torchneuron/_env.py).
#include <c10/util/Exception.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "runtime/Runtime.h"
#include "runtime/SimRuntime.h"
#include "runtime/nrt/NrtLoader.h"
#include "runtime/nrt/NrtRuntime.h"

namespace torchneuron {

namespace {
RuntimeConfig g_config;
std::once_flag g_fork_handler_once;
std::mutex g_mutex;
// Leaked on purpose: queue worker threads and tensors freed during interpreter teardown may still use it.
Runtime* g_runtime = nullptr;
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_bad_fork{false};
std::atomic<bool> g_host_memory{true};

void markChildAfterFork() {
  // The parent's queues, worker threads and device memory do not exist in the child.
  if (g_initialized.load()) {
    g_bad_fork.store(true);
  }
}

[[noreturn]] void failNrt(const NrtLoad& load) {
  if (load.outcome == NrtLoad::Outcome::kMissing) {
    TORCH_CHECK(false, "neuron: TORCHNEURON_RUNTIME=nrt, but libnrt could not be loaded (", load.error,
                "). On a Trainium host install the Neuron runtime (aws-neuronx-runtime-lib, /opt/aws/neuron/lib) "
                "and make sure libnrt.so.1 is on the loader path; elsewhere use TORCHNEURON_RUNTIME=sim or auto.");
  }
  TORCH_CHECK(false, "neuron: TORCHNEURON_RUNTIME=nrt, but the libnrt found is too old: ", load.error,
              ". Install a current aws-neuronx-runtime-lib (the Neuron SDK's runtime), or use "
              "TORCHNEURON_RUNTIME=sim.");
}

// auto: nrt when libnrt loads and reports a NeuronCore (nrt_get_visible_vnc_count may run before nrt_init).
bool nrtUsable(const NrtLoad& load) {
  if (load.outcome != NrtLoad::Outcome::kLoaded) return false;
  uint32_t count = 0;
  return load.library->nrt_get_visible_vnc_count(&count) == NRT_SUCCESS && count > 0;
}

std::unique_ptr<Runtime> createRuntime(const RuntimeConfig& config) {
  TORCH_CHECK(config.kind == "auto" || config.kind == "sim" || config.kind == "nrt", "neuron: TORCHNEURON_RUNTIME='",
              config.kind, "' is not one of auto, sim, nrt");
  if (config.kind != "sim") {
    const NrtLoad& load = loadLibnrt();
    if (config.kind == "nrt" && load.outcome != NrtLoad::Outcome::kLoaded) failNrt(load);
    if (config.kind == "nrt" || nrtUsable(load)) {
      return std::make_unique<NrtRuntime>(load.library, config);
    }
    if (load.outcome == NrtLoad::Outcome::kTooOld) {
      TORCH_WARN("neuron: ", load.error, "; using the simulator (TORCHNEURON_RUNTIME=auto)");
    }
  }
  const TargetInfo& target = lookupTarget(config.target);
  int devices = config.devices > 0 ? config.devices : target.logical_cores;
  TORCH_CHECK(devices < kMaxDevices, "neuron: ", devices, " devices requested; PyTorch device indices stop at 127");
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
    g_host_memory.store(g_runtime->hostAddressable(), std::memory_order_release);
    g_initialized.store(true, std::memory_order_release);
  }
  return *g_runtime;
}

bool inBadFork() { return g_bad_fork.load(); }

bool deviceMemoryIsHostMemory() { return g_host_memory.load(std::memory_order_acquire); }

int deviceCountNoThrow() noexcept {
  try {
    if (g_bad_fork.load()) {
      return 0;
    }
    if (g_initialized.load(std::memory_order_acquire)) {
      return g_runtime->deviceCount();
    }
    // Counting devices must not start worker threads, allocate or reserve NeuronCores: libnrt answers
    // nrt_get_visible_vnc_count before nrt_init, and the simulator's count follows from the configuration.
    if (g_config.kind != "sim") {
      const NrtLoad& load = loadLibnrt();
      uint32_t count = 0;
      if (load.outcome == NrtLoad::Outcome::kLoaded && load.library->nrt_get_visible_vnc_count(&count) == NRT_SUCCESS &&
          (count > 0 || g_config.kind == "nrt")) {
        return static_cast<int>(std::min<uint32_t>(count, kMaxDevices - 1));
      }
      if (g_config.kind == "nrt") return 0;  // runtime() will say why
    }
    const TargetInfo& target = lookupTarget(g_config.target);
    return g_config.devices > 0 ? g_config.devices : target.logical_cores;
  } catch (...) {
    return 0;
  }
}

NrtRuntime& nrtRuntime(const char* what) {
  Runtime& rt = runtime();
  auto* nrt = dynamic_cast<NrtRuntime*>(&rt);
  TORCH_CHECK(nrt != nullptr, "neuron: ", what, " needs the nrt runtime (a Trn host with libnrt, "
              "TORCHNEURON_RUNTIME=nrt); this process runs the ", rt.name(), " runtime. On the simulator compile "
              "with target='sim' to run the same StableHLO on XLA:CPU.");
  return *nrt;
}

} // namespace torchneuron
