#include "python/PythonHooks.h"

#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <unordered_map>

#include "aten/native/OpRegistry.h"

namespace py = pybind11;

namespace torchneuron::python {

namespace {
// Leaked on purpose: these may be called during interpreter shutdown.
py::object* g_policy = nullptr;
py::object* g_executor = nullptr;
py::object* g_nrt_executor = nullptr;

// The executors run inside ops, and ops may run while Dynamo evaluates a frame (a graph break, a backward
// called from compiled code): Dynamo's frame hook must not try to trace torchneuron's own Python.
class DynamoOff {
 public:
  DynamoOff() : prior_(setter()(py::none())) {}
  ~DynamoOff() {
    try {
      setter()(prior_);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(__func__);
    }
  }

 private:
  static py::object& setter() {
    static py::object* fn =
        new py::object(py::module::import("torch._C._dynamo.eval_frame").attr("set_eval_frame"));
    return *fn;
  }
  py::object prior_;
};

std::optional<std::string> callPolicy(const std::string& op_name) {
  py::gil_scoped_acquire gil;
  if (g_policy == nullptr) return std::nullopt;
  DynamoOff no_dynamo;
  py::object result = (*g_policy)(op_name);
  if (result.is_none()) return std::nullopt;
  return result.cast<std::string>();
}

py::object overloadPacket(const c10::OperatorHandle& op) {
  static std::unordered_map<const void*, py::object>* cache = new std::unordered_map<const void*, py::object>();
  auto it = cache->find(&op.schema());
  if (it != cache->end()) return it->second;
  const auto& name = op.operator_name();
  auto sep = name.name.find("::");
  py::object ops = py::module::import("torch").attr("ops");
  py::object packet = ops.attr(name.name.substr(0, sep).c_str()).attr(name.name.substr(sep + 2).c_str());
  py::object overload = packet.attr(name.overload_name.empty() ? "default" : name.overload_name.c_str());
  cache->emplace(&op.schema(), overload);
  return overload;
}

bool callExecutor(py::object* const& executor, const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  py::gil_scoped_acquire gil;
  if (executor == nullptr) return false;
  DynamoOff no_dynamo;
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;
  py::list args;
  py::dict kwargs;
  for (size_t i = 0; i < nargs; ++i) {
    py::object value = torch::jit::toPyObject((*stack)[base + i]);
    const auto& arg = schema.arguments()[i];
    if (arg.kwarg_only()) kwargs[arg.name().c_str()] = value;
    else args.append(value);
  }
  py::object result = (*executor)(overloadPacket(op), py::tuple(args), kwargs);
  if (result.is(py::reinterpret_borrow<py::object>(Py_NotImplemented))) return false;
  torch::jit::drop(*stack, nargs);
  const auto& returns = schema.returns();
  if (returns.size() == 1) {
    stack->push_back(torch::jit::toIValue(result, returns[0].type()));
  } else if (returns.size() > 1) {
    auto items = result.cast<py::sequence>();
    TORCH_CHECK(items.size() == returns.size(), "neuron: eager executor returned ", items.size(),
                " values for ", schema.name(), ", which returns ", returns.size());
    for (size_t i = 0; i < returns.size(); ++i) {
      stack->push_back(torch::jit::toIValue(items[i], returns[i].type()));
    }
  }
  return true;
}

bool callStrictExecutor(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  return callExecutor(g_executor, op, stack);
}

bool callNrtExecutor(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  return callExecutor(g_nrt_executor, op, stack);
}
} // namespace

namespace {
// Keeps `fn` in `slot` and hands `callback` (which calls it) to the device layer's `set`; None uninstalls.
template <class Callback>
void install(py::object fn, py::object*& slot, void (*set)(Callback), Callback callback) {
  if (fn.is_none()) {
    set(nullptr);
    return;
  }
  if (slot == nullptr) slot = new py::object();
  *slot = std::move(fn);
  set(callback);
}
} // namespace

bool calledFromTensorFormatting() {
  if (!Py_IsInitialized()) return false;
  py::gil_scoped_acquire gil;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed; null on threads with no Python code running
  if (frame == nullptr) return false;
  py::object current = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(frame));
  // Walk out through torch's own frames only (operator wrappers in torch/_tensor.py); the first frame outside
  // the torch package is the caller that decides.
  for (int depth = 0; depth < 8 && current; ++depth) {
    auto* f = reinterpret_cast<PyFrameObject*>(current.ptr());
    auto code = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetCode(f)));
    const auto file = code.attr("co_filename").cast<std::string>();
    const auto ends_with = [&](const std::string& tail) {
      return file.size() >= tail.size() && file.compare(file.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with("/torch/_tensor_str.py")) return true;
    if (file.find("/torch/") == std::string::npos) return false;
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference or null
    current = back ? py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(back)) : py::object();
  }
  return false;
}

void setOpPolicy(py::object fn) { install(std::move(fn), g_policy, &torchneuron::setOpPolicy, &callPolicy); }

void setEagerExecutor(py::object fn) {
  install(std::move(fn), g_executor, &torchneuron::setEagerExecutor, &callStrictExecutor);
}

void setNrtExecutor(py::object fn) {
  install(std::move(fn), g_nrt_executor, &torchneuron::setNrtExecutor, &callNrtExecutor);
}

} // namespace torchneuron::python
