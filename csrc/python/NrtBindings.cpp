#include "python/NrtBindings.h"

#include <torch/extension.h>

#include "allocator/CachingAllocator.h"
#include "device/Streams.h"
#include "python/PythonHooks.h"
#include "runtime/nrt/NrtLoader.h"
#include "runtime/nrt/NrtRuntime.h"

namespace py = pybind11;

namespace torchneuron {

namespace {
const char* outcomeName(NrtLoad::Outcome o) {
  switch (o) {
    case NrtLoad::Outcome::kLoaded: return "loaded";
    case NrtLoad::Outcome::kTooOld: return "too old";
    default: return "missing";
  }
}

std::string mib(int64_t bytes) { return c10::str(bytes / (1 << 20), " MiB"); }

// NRT_RESOURCE while loading or executing: release the caching allocator's cached blocks (as an allocation
// does), then try once more; if that fails too, the torch.OutOfMemoryError says what holds the device.
template <class Fn>
auto retryAfterEmptyingCache(int device, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::OutOfMemoryError&) {
    cachingAllocator().emptyCache();
  }
  try {
    return fn();
  } catch (c10::OutOfMemoryError& e) {
    const auto stats = cachingAllocator().getDeviceStats(static_cast<c10::DeviceIndex>(device));
    e.add_context(c10::str("neuron:", device, " has ", mib(stats.allocated_bytes[0].current),
                           " allocated by tensors and ", mib(stats.reserved_bytes[0].current),
                           " reserved by the caching allocator (after releasing its cache); its limit is ",
                           mib(runtime().capacity(device)), "."));
    throw;
  }
}

std::vector<NrtSpan> spansOf(const std::vector<at::Tensor>& tensors, int device, const char* kind,
                             const std::string& what) {
  std::vector<NrtSpan> spans;
  spans.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    TORCH_CHECK(t.defined() && t.device().is_privateuseone() && t.device().index() == device, "neuron: ", what,
                ": ", kind, " ", i, " must be a tensor on neuron:", device, ", got ",
                t.defined() ? c10::str(t.device()) : std::string("an undefined tensor"));
    TORCH_CHECK(t.is_contiguous() && !t.is_conj() && !t.is_neg(), "neuron: ", what, ": ", kind, " ", i,
                " must be contiguous (a NEFF reads dense row-major tensors), got sizes ", t.sizes(), " strides ",
                t.strides());
    spans.push_back({t.data_ptr(), t.nbytes()});
  }
  return spans;
}
} // namespace

void bindNrt(py::module& m) {
  m.def("_probe_libnrt", [] {
    const NrtLoad& load = loadLibnrt();
    py::dict out;
    out["status"] = outcomeName(load.outcome);
    out["path"] = load.path;
    out["version"] = load.version;
    out["error"] = load.error;
    return out;
  });
  m.def("_set_nrt_executor", &python::setNrtExecutor,
        "The eager executor of the nrt runtime (every op a NEFF, or the CPU); consulted only on nrt.");

  m.def("_nrt_load_model", [](py::bytes neff, int device) {
    std::string bytes = neff;
    NrtRuntime& rt = nrtRuntime("loading a NEFF");
    py::gil_scoped_release no_gil;
    return retryAfterEmptyingCache(device, [&] { return rt.loadModel(device, bytes.data(), bytes.size()); });
  }, "nrt_load a NEFF on a device; returns its handle");
  m.def("_nrt_model_io", [](int64_t model) {
    NrtModelIo io = nrtRuntime("a NEFF's tensors").modelIo(model);
    auto slots = [](const std::vector<NrtTensorSlot>& v) {
      py::list out;
      for (const auto& s : v) out.append(py::make_tuple(s.name, s.nbytes));
      return out;
    };
    return py::make_tuple(io.device, slots(io.inputs), slots(io.outputs));
  });
  m.def("_nrt_execute", [](int64_t model, const std::vector<at::Tensor>& inputs,
                           const std::vector<at::Tensor>& outputs, const std::string& what) {
    NrtRuntime& rt = nrtRuntime("executing a NEFF");
    const int device = rt.modelIo(model).device;
    const auto in = spansOf(inputs, device, "input", what);
    const auto out = spansOf(outputs, device, "output", what);
    auto queue = currentQueue(static_cast<c10::DeviceIndex>(device));
    py::gil_scoped_release no_gil;
    retryAfterEmptyingCache(device, [&] { rt.execute(model, in, out, *queue, what); });
  }, "Run a loaded NEFF in stream order: reads `inputs`, writes the preallocated `outputs` (neuron tensors)");
  m.def("_nrt_unload_model", [](int64_t model) {
    if (!runtimeInitialized()) return;
    if (auto* rt = dynamic_cast<NrtRuntime*>(&runtime())) rt->unloadModel(model);
  });
  m.def("_nrt_close", [] {
    if (!runtimeInitialized()) return;
    if (auto* rt = dynamic_cast<NrtRuntime*>(&runtime())) {
      py::gil_scoped_release no_gil;
      for (int d = 0; d < rt->deviceCount(); ++d) {
        try {
          rt->synchronize(d);
        } catch (const std::exception&) {
          // at exit, an error of unfinished async work has nobody left to report to
        }
      }
      rt->close();
    }
  });
}

} // namespace torchneuron
