// torchneuron._C: Python bindings only. Behaviour lives in runtime/, allocator/, device/ and aten/.
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/extension.h>

#include <chrono>

#include "allocator/CachingAllocator.h"
#include "allocator/ExternalMemory.h"
#include "aten/native/Fp64Emulation.h"
#include "aten/native/HostAlias.h"
#include "aten/native/HostOutputAllocator.h"
#include "aten/native/HostThreads.h"
#include "aten/native/OpRegistry.h"
#include "device/Generator.h"
#include "device/PinnedAllocator.h"
#include "device/Streams.h"
#include "python/ProfilerBindings.h"
#include "python/DistributedBindings.h"
#include "python/DlpackExport.h"
#include "python/NrtBindings.h"
#include "python/PythonHooks.h"
#include "runtime/Runtime.h"

namespace py = pybind11;
using namespace torchneuron;

namespace {

py::dict statArray(const c10::CachingAllocator::StatArray& stats) {
  static const char* kPools[] = {"all", "small_pool", "large_pool"};
  py::dict out;
  for (size_t i = 0; i < stats.size(); ++i) {
    py::dict s;
    s["current"] = stats[i].current;
    s["peak"] = stats[i].peak;
    s["allocated"] = stats[i].allocated;
    s["freed"] = stats[i].freed;
    out[kPools[i]] = s;
  }
  return out;
}

// The same nesting as torch.cuda.memory_stats_as_nested_dict().
py::dict memoryStats(c10::DeviceIndex device) {
  auto stats = cachingAllocator().getDeviceStats(device);
  py::dict out;
  out["allocation"] = statArray(stats.allocation);
  out["segment"] = statArray(stats.segment);
  out["active"] = statArray(stats.active);
  out["inactive_split"] = statArray(stats.inactive_split);
  out["allocated_bytes"] = statArray(stats.allocated_bytes);
  out["reserved_bytes"] = statArray(stats.reserved_bytes);
  out["active_bytes"] = statArray(stats.active_bytes);
  out["inactive_split_bytes"] = statArray(stats.inactive_split_bytes);
  out["requested_bytes"] = statArray(stats.requested_bytes);
  out["num_alloc_retries"] = stats.num_alloc_retries;
  out["num_ooms"] = stats.num_ooms;
  out["num_sync_all_streams"] = stats.num_sync_all_streams;
  out["num_device_alloc"] = stats.num_device_alloc;
  out["num_device_free"] = stats.num_device_free;
  out["max_split_size"] = -1;  // blocks of any size may be split (no max_split_size_mb knob yet)
  py::dict oversize;
  oversize["current"] = 0;
  oversize["peak"] = 0;
  oversize["allocated"] = 0;
  oversize["freed"] = 0;
  out["oversize_allocations"] = oversize;
  out["oversize_segments"] = oversize;
  return out;
}

py::dict runtimeInfo() {
  Runtime& rt = runtime();
  const TargetInfo& t = rt.target();
  py::dict out;
  out["runtime"] = rt.name();
  out["target"] = t.name;
  out["instance"] = t.instance;
  out["core_generation"] = t.core_generation;
  out["lnc"] = t.lnc;
  out["devices"] = rt.deviceCount();
  out["hbm_bytes_per_device"] = rt.deviceCount() > 0 ? rt.capacity(0) : 0;
  out["streams_per_device"] = rt.streamsPerDevice();
  return out;
}

// One row of torchneuron.targets.table(): (name, instance, core_generation, logical_cores, lnc, chip_hbm_bytes,
// nrt_families).
TargetInfo targetFromRow(const py::tuple& row) {
  TargetInfo t;
  t.name = row[0].cast<std::string>();
  t.instance = row[1].cast<std::string>();
  t.core_generation = row[2].cast<std::string>();
  t.logical_cores = row[3].cast<int>();
  t.lnc = row[4].cast<int>();
  t.chip_hbm_bytes = row[5].cast<int64_t>();
  t.nrt_families = row[6].cast<std::vector<int>>();
  return t;
}

double benchAllocator(size_t nbytes, int64_t iters) {
  c10::DeviceIndex device = currentDevice();
  auto& alloc = cachingAllocator();
  { auto warm = alloc.allocateOn(device, 0, nbytes); }
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    auto ptr = alloc.allocateOn(device, 0, nbytes);
  }
  auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(iters);
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchneuron C++ core (runtime, caching allocator, device guard, ATen kernels)";

  m.def("_configure", [](const std::string& kind, const std::string& target, int devices, int64_t hbm_bytes,
                         bool launch_blocking, int lnc, const std::vector<py::tuple>& targets,
                         const std::string& framework_version, const std::string& fal_version) {
    RuntimeConfig config{kind, target, devices, hbm_bytes, launch_blocking, lnc, {}, framework_version, fal_version};
    for (const auto& row : targets) config.targets.push_back(targetFromRow(row));
    configureRuntime(config);
  });
  m.def("_lazy_init", [] {
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
    torch::utils::device_lazy_init(at::kPrivateUse1);
  });
  m.def("_is_initialized", &runtimeInitialized);
  m.def("_is_in_bad_fork", [] { return inBadFork() || torch::utils::is_device_in_bad_fork(at::kPrivateUse1); });
  m.def("_device_count", &deviceCountNoThrow);
  m.def("_runtime_info", &runtimeInfo);
  // The runtime's target ("" when it is not initialised and `initialize` is false).
  m.def("_runtime_target", [](bool initialize) -> std::string {
    if (!initialize && !runtimeInitialized()) return "";
    return runtime().target().name;
  });
  bindNrt(m);
  m.def("_get_device", [] { return static_cast<int>(currentDevice()); });
  m.def("_set_device", [](int index) { setCurrentDevice(static_cast<c10::DeviceIndex>(index)); });
  m.def("_synchronize", [](int index) {
    py::gil_scoped_release no_gil;
    runtime().synchronize(index < 0 ? currentDevice() : index);
  });

  m.def("_get_default_generator", [](int index) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(defaultGenerator(static_cast<c10::DeviceIndex>(index))));
  });

  m.def("_memory_stats", [](int index) { return memoryStats(static_cast<c10::DeviceIndex>(index)); });
  m.def("_reset_peak_memory_stats", [](int index) { cachingAllocator().resetPeakStats(index); });
  m.def("_reset_accumulated_memory_stats", [](int index) { cachingAllocator().resetAccumulatedStats(index); });
  m.def("_empty_cache", [] {
    py::gil_scoped_release no_gil;
    cachingAllocator().emptyCache();
  });
  m.def("_set_memory_fraction", [](double fraction, int index) {
    cachingAllocator().setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index));
  });
  m.def("_mem_get_info", [](int index) { return cachingAllocator().getMemoryInfo(index); });
  m.def("_host_memory_stats", [] {
    auto s = pinnedAllocator().get_stats();
    py::dict out;
    out["allocated_bytes.current"] = s.allocated_bytes.current;
    out["allocated_bytes.peak"] = s.allocated_bytes.peak;
    out["allocations.current"] = s.allocations.current;
    out["num_host_alloc"] = s.num_host_alloc;
    out["num_host_free"] = s.num_host_free;
    return out;
  });
  m.def("_bench_allocator", &benchAllocator, py::arg("nbytes"), py::arg("iters"),
        "Mean ns for one cached allocate+free pair of `nbytes` on the current device.");

  // Settings Python reads from the environment (torchneuron/_env.py) and passes in at import.
  m.def("_set_fp64_rule", [](bool emulate, std::vector<std::string> exempt_ops) {
    configureFp64(emulate ? Fp64Mode::Emulate : Fp64Mode::Native, std::move(exempt_ops));
  }, py::arg("emulate"), py::arg("exempt_ops"));
  m.def("_set_autograd_thread_intra_op_threads", &setAutogradThreadIntraOpThreads, py::arg("threads"));

  m.def("_executed_ops", [] { return executedOps(); });
  m.def("_reset_executed_ops", &resetExecutedOps);
  m.def("_set_op_policy", &python::setOpPolicy);
  setFp64CallerIsInternal(&python::calledFromTensorFormatting);
  m.def("_set_eager_executor", &python::setEagerExecutor);

  // Compiled graphs and other external executors read device memory directly: earlier work queued on the
  // current stream (async copies) must have finished, as before any host kernel.
  m.def("_drain_current_stream", [](int index) {
    auto queue = queueOf(currentStream(static_cast<c10::DeviceIndex>(index)));
    if (!queue->idle()) queue->drain();
  });
  // External host executors (compiled graphs run by inductor's CPU code) allocate their results the way host
  // kernels do: inside this scope the calling thread's CPU allocations come from neuron device memory, and
  // _from_host_result hands a fresh result over as a neuron tensor without a copy.
  struct OutputsOnDevice {
    int device;
    std::unique_ptr<CaptureOutputsOnDevice> scope;
  };
  py::class_<OutputsOnDevice>(m, "_OutputsOnDevice")
      .def(py::init([](int device) { return OutputsOnDevice{device, nullptr}; }))
      .def("__enter__", [](OutputsOnDevice& c) {
        const auto device = static_cast<c10::DeviceIndex>(c.device);
        c.scope = std::make_unique<CaptureOutputsOnDevice>(device, static_cast<int>(currentStream(device).id()));
      })
      .def("__exit__", [](OutputsOnDevice& c, py::args) { c.scope.reset(); });
  m.def("_from_host_result", [](const at::Tensor& t, int device) {
    return fromHostResult(t, static_cast<c10::DeviceIndex>(device));
  });
  m.def("_captures_cpu_allocations", &capturesCpuAllocations,
        "Whether the process's CPU allocator is the host-kernel capture wrapper (installed at first use).");
  python::bindProfiler(m);
  m.def("_host_view", &hostAlias, "CPU tensor aliasing a neuron tensor's memory (sim runtime only)");
  m.def("_adopt_host_tensor", [](const at::Tensor& cpu, int index) {
    return adoptHostTensor(cpu, static_cast<c10::DeviceIndex>(index));
  });
  // A compiled program's working set while it runs (programs/host_bridge.py): charged before, released after.
  m.def("_charge_device_memory", [](int index, size_t nbytes) {
    chargeExternalMemory(static_cast<c10::DeviceIndex>(index), nullptr, nbytes);
  });
  m.def("_release_device_memory", [](int index, size_t nbytes) {
    releaseExternalMemory(static_cast<c10::DeviceIndex>(index), nullptr, nbytes);
  });
  python::initDistributedBindings(m);
  bindDlpack(m);
}
