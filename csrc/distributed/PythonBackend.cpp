#include "distributed/PythonBackend.h"

#include "distributed/CollectiveWork.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace torchneuron::distributed {

namespace {

c10::intrusive_ptr<c10d::Work> toWork(const py::object& result, const char* name) {
  try {
    return result.cast<c10::intrusive_ptr<c10d::Work>>();
  } catch (const py::cast_error&) {
    TORCH_CHECK(false, "neuron process group: ", name, " returned ", std::string(py::str(result.get_type())),
                ", expected a torch.distributed.Work");
  }
}

// The group's collective count on a collective's Work (CollectiveWork.h); other Works have none.
c10::intrusive_ptr<c10d::Work> stamped(c10::intrusive_ptr<c10d::Work> work, uint64_t seq) {
  if (auto* collective = dynamic_cast<CollectiveWork*>(work.get())) {
    collective->setSequenceNumber(seq);
  }
  return work;
}

bool matches(py::error_already_set& e, const char* module, const char* type) {
  try {
    return e.matches(py::module_::import(module).attr(type));
  } catch (const py::error_already_set&) {
    return false;
  }
}

} // namespace

void rethrowPythonError(py::error_already_set& e, const std::string& where) {
  const std::string msg = where.empty() ? std::string(py::str(e.value())) : where + ": " + std::string(py::str(e.value()));
  if (matches(e, "torch.distributed", "DistBackendError")) C10_THROW_ERROR(DistBackendError, msg);
  if (matches(e, "torch.distributed", "DistNetworkError")) C10_THROW_ERROR(DistNetworkError, msg);
  if (matches(e, "torch.distributed", "DistStoreError")) C10_THROW_ERROR(DistStoreError, msg);
  if (matches(e, "torch", "OutOfMemoryError")) C10_THROW_ERROR(OutOfMemoryError, msg);
  if (e.matches(PyExc_ValueError)) C10_THROW_ERROR(ValueError, msg);
  if (e.matches(PyExc_TypeError)) C10_THROW_ERROR(TypeError, msg);
  if (e.matches(PyExc_NotImplementedError)) C10_THROW_ERROR(NotImplementedError, msg);
  if (e.matches(PyExc_IndexError)) C10_THROW_ERROR(IndexError, msg);
  C10_THROW_ERROR(Error, msg);
}

PythonBackend::PythonBackend(int rank, int size, std::string name, py::object impl)
    : Backend(rank, size), name_(std::move(name)), impl_(std::move(impl)) {}

PythonBackend::~PythonBackend() {
  if (!Py_IsInitialized()) {
    impl_.release();  // the interpreter is gone: nothing to release it to
    return;
  }
  py::gil_scoped_acquire gil;
  impl_ = py::object();
}

py::object PythonBackend::method(const char* name) const { return py::getattr(impl_, name, py::none()); }

void PythonBackend::enter(const char* op, const std::vector<at::Tensor>& tensors) {
  ++seq_;
  if (!mismatch_check_) {
    return;
  }
  // The exchange waits for the peers; gloo's threads may need the GIL meanwhile (releasing tensors).
  std::optional<py::gil_scoped_release> no_gil;
  if (PyGILState_Check()) {
    no_gil.emplace();
  }
  mismatch_check_->agree(op, tensors);
}

namespace {
std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& l : lists) {
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}
} // namespace

// Forwards a collective to impl_.PYNAME(args...) under the GIL; c10d's own "does not support" otherwise.
#define TORCHNEURON_FORWARD_AS(PYNAME, NAME, ...)                  \
  do {                                                             \
    py::gil_scoped_acquire gil;                                    \
    py::object fn = method(#PYNAME);                               \
    if (fn.is_none()) {                                            \
      return c10d::Backend::NAME(__VA_ARGS__);                     \
    }                                                              \
    try {                                                          \
      return stamped(toWork(fn(__VA_ARGS__), #PYNAME), seq_.load()); \
    } catch (py::error_already_set & e) {                          \
      rethrowPythonError(e, "");                                   \
    }                                                              \
  } while (false)
#define TORCHNEURON_FORWARD_WORK(NAME, ...) TORCHNEURON_FORWARD_AS(NAME, NAME, __VA_ARGS__)

c10::intrusive_ptr<c10d::Work> PythonBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  enter("broadcast", tensors);
  TORCHNEURON_FORWARD_WORK(broadcast, tensors, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  enter("all_reduce", tensors);
  if (host_allreduce_ && !coalescing_) {  // while coalescing, Python collects every Work
    if (auto work = host_allreduce_->tryRun(tensors, opts)) {
      return stamped(std::move(work), seq_.load());
    }
  }
  TORCHNEURON_FORWARD_WORK(allreduce, tensors, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                  const c10d::AllreduceCoalescedOptions& opts) {
  enter("all_reduce_coalesced", tensors);
  TORCHNEURON_FORWARD_WORK(allreduce_coalesced, tensors, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  enter("reduce", tensors);
  TORCHNEURON_FORWARD_WORK(reduce, tensors, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::AllgatherOptions& opts) {
  enter("all_gather", flatten(outputs));  // the same list on every rank, even if uneven
  TORCHNEURON_FORWARD_WORK(allgather, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                              const c10d::AllgatherOptions& opts) {
  enter("all_gather_into_tensor", {input});
  TORCHNEURON_FORWARD_WORK(_allgather_base, output, input, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                  std::vector<at::Tensor>& inputs,
                                                                  const c10d::AllgatherOptions& opts) {
  enter("all_gather_coalesced", flatten(outputs));
  TORCHNEURON_FORWARD_WORK(allgather_coalesced, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                              std::vector<at::Tensor>& inputs,
                                                                              const c10d::AllgatherOptions& opts) {
  enter("all_gather_into_tensor_coalesced", inputs);
  TORCHNEURON_FORWARD_WORK(allgather_into_tensor_coalesced, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::GatherOptions& opts) {
  enter("gather", inputs);
  TORCHNEURON_FORWARD_WORK(gather, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::scatter(std::vector<at::Tensor>& outputs,
                                                      std::vector<std::vector<at::Tensor>>& inputs,
                                                      const c10d::ScatterOptions& opts) {
  enter("scatter", outputs);
  TORCHNEURON_FORWARD_WORK(scatter, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const c10d::ReduceScatterOptions& opts) {
  enter("reduce_scatter", flatten(inputs));  // the same list on every rank
  TORCHNEURON_FORWARD_WORK(reduce_scatter, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::ReduceScatterOptions& opts) {
  enter("reduce_scatter_tensor", {input});
  TORCHNEURON_FORWARD_WORK(_reduce_scatter_base, output, input, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  enter("reduce_scatter_tensor_coalesced", inputs);
  TORCHNEURON_FORWARD_WORK(reduce_scatter_tensor_coalesced, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                            std::vector<int64_t>& output_splits,
                                                            std::vector<int64_t>& input_splits,
                                                            const c10d::AllToAllOptions& opts) {
  enter();
  TORCHNEURON_FORWARD_WORK(alltoall_base, output, input, output_splits, input_splits, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllToAllOptions& opts) {
  enter();
  TORCHNEURON_FORWARD_WORK(alltoall, outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  TORCHNEURON_FORWARD_WORK(send, tensors, dst, tag);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  TORCHNEURON_FORWARD_WORK(recv, tensors, src, tag);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  TORCHNEURON_FORWARD_AS(recv_anysource, recvAnysource, tensors, tag);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::endCoalescing() {
  coalescing_ = false;
  TORCHNEURON_FORWARD_AS(end_coalescing, endCoalescing);
}

c10::intrusive_ptr<c10d::Work> PythonBackend::barrier(const c10d::BarrierOptions& opts) {
  enter();
  TORCHNEURON_FORWARD_WORK(barrier, opts);
}

#undef TORCHNEURON_FORWARD_WORK
#undef TORCHNEURON_FORWARD_AS

namespace {
// Calls impl.NAME(args...) when it exists; returns false when it does not.
template <typename... Args>
bool callIfDefined(const py::object& impl, const char* name, py::object* result, Args&&... args) {
  py::gil_scoped_acquire gil;
  if (!py::hasattr(impl, name)) {
    return false;
  }
  try {
    py::object r = impl.attr(name)(std::forward<Args>(args)...);
    if (result != nullptr) {
      *result = std::move(r);
    }
  } catch (py::error_already_set& e) {
    rethrowPythonError(e, "");
  }
  return true;
}
} // namespace

void PythonBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  if (!callIfDefined(impl_, "monitored_barrier", nullptr, opts, wait_all_ranks)) {
    c10d::Backend::monitoredBarrier(opts, wait_all_ranks);
  }
}

void PythonBackend::startCoalescing() {
  if (!callIfDefined(impl_, "start_coalescing", nullptr)) {
    c10d::Backend::startCoalescing();
  }
  coalescing_ = true;
}

void PythonBackend::setTimeout(std::chrono::milliseconds timeout) {
  if (!callIfDefined(impl_, "set_timeout", nullptr, timeout)) {
    c10d::Backend::setTimeout(timeout);
  }
}

void PythonBackend::abort() { callIfDefined(impl_, "abort", nullptr); }

void PythonBackend::shutdown() { callIfDefined(impl_, "shutdown", nullptr); }

} // namespace torchneuron::distributed
