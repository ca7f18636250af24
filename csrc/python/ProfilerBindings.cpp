// Bindings of the neuron profiler (csrc/profiler/): recording device activity from Python (compiled graph
// pieces, NKI kernels), the last session's records, and the Python cost model that estimates Trainium time
// for eager ops when a session is processed. Bindings only.
#include "python/ProfilerBindings.h"

#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/utils/pybind.h>

#include "profiler/DeviceActivity.h"

namespace py = pybind11;

namespace torchneuron::python {

namespace {
using profiler::ActivityKind;
using profiler::DeviceActivity;

ActivityKind kindNamed(const std::string& kind) {
  if (kind == "op") return ActivityKind::Op;
  if (kind == "graph") return ActivityKind::Graph;
  if (kind == "kernel") return ActivityKind::Kernel;
  if (kind == "copy") return ActivityKind::Copy;
  TORCH_CHECK(false, "neuron profiler: unknown device activity kind '", kind,
              "'; use 'op', 'graph', 'kernel' or 'copy'");
}

bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

py::object dtypeObject(c10::ScalarType t) {
  return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPDtype(t)));
}

py::list tensorsOf(const DeviceActivity& r) {
  py::list out;
  for (const auto& t : r.tensors) {
    out.append(py::make_tuple(py::tuple(py::cast(std::vector<int64_t>(t.sizes.begin(), t.sizes.end()))),
                              dtypeObject(t.dtype), t.written));
  }
  return out;
}

// Eager ops and copies carry their tensors, not an estimate: torchneuron.profiler._annotate estimates them (lazily
// imported: nothing Python runs unless a session recorded neuron activity).
void annotateInPython(std::vector<DeviceActivity>& records) {
  if (!Py_IsInitialized() || finalizing()) return;  // a session ending at interpreter exit: no estimates
  py::gil_scoped_acquire gil;
  std::vector<size_t> todo;
  py::list batch;
  for (size_t i = 0; i < records.size(); ++i) {
    const DeviceActivity& r = records[i];
    if (r.estimated_ns >= 0 || (r.kind != ActivityKind::Op && r.kind != ActivityKind::Copy)) continue;
    todo.push_back(i);
    batch.append(py::make_tuple(r.name, tensorsOf(r), r.out_bytes));
  }
  if (todo.empty()) return;
  try {
    py::object results = py::module_::import("torchneuron.profiler._annotate").attr("annotate")(batch);
    size_t k = 0;
    for (py::handle item : results) {
      if (k >= todo.size()) break;
      DeviceActivity& r = records[todo[k++]];
      auto pair = item.cast<py::tuple>();
      r.estimated_ns = pair[0].is_none() ? -1.0 : pair[0].cast<double>();
      for (auto kv : pair[1].cast<py::dict>()) {
        r.metadata.emplace_back(kv.first.cast<std::string>(), kv.second.cast<std::string>());
      }
    }
  } catch (py::error_already_set& e) {
    throw std::runtime_error(e.what());
  }
}

py::dict asDict(const DeviceActivity& r) {
  py::dict d;
  d["kind"] = profiler::kindName(r.kind);
  d["name"] = r.kind == ActivityKind::Op ? profiler::withoutOverload(r.name) : r.name;
  d["op"] = r.name;
  d["device"] = r.device;
  d["stream"] = r.stream;
  d["start_ns"] = r.start_ns;
  d["end_ns"] = r.end_ns;
  d["correlation"] = r.correlation;
  d["estimated_ns"] = r.estimated_ns >= 0 ? py::object(py::float_(r.estimated_ns)) : py::none();
  py::dict meta;
  for (const auto& [key, json] : r.metadata) meta[key.c_str()] = json;
  d["metadata"] = meta;
  d["tensors"] = tensorsOf(r);
  d["out_bytes"] = r.out_bytes;
  return d;
}
} // namespace

void bindProfiler(py::module_& m) {
  profiler::setAnnotator(&annotateInPython);

  m.def("_profiler_recording", &profiler::recording,
        "True while a torch.profiler session records neuron device activity");
  m.def("_profiler_now_ns", &profiler::nowNs, "The clock of device activities (unix-epoch ns, as Kineto's)");
  m.def(
      "_record_device_activity",
      [](const std::string& kind, const std::string& name, int device, int stream, int64_t start_ns,
         int64_t end_ns, double estimated_ns, const std::vector<std::pair<std::string, std::string>>& metadata) {
        if (!profiler::recording()) return;
        DeviceActivity r;
        r.kind = kindNamed(kind);
        r.name = name;
        r.device = device;
        r.stream = stream;
        r.start_ns = start_ns;
        r.end_ns = end_ns;
        r.estimated_ns = estimated_ns;
        r.metadata = metadata;
        profiler::record(std::move(r));
      },
      py::arg("kind"), py::arg("name"), py::arg("device"), py::arg("stream"), py::arg("start_ns"),
      py::arg("end_ns"), py::arg("estimated_ns"), py::arg("metadata"));
  m.def("_last_device_activities", [] {
    py::list out;
    for (const auto& r : profiler::lastSession()) out.append(asDict(r));
    return out;
  });
}

} // namespace torchneuron::python
