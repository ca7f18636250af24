#include "python/DistributedBindings.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "distributed/CollectiveWork.h"
#include "distributed/PythonBackend.h"

namespace py = pybind11;

namespace torchneuron::python {

using distributed::CollectiveWork;
using distributed::PostOp;
using distributed::PythonBackend;

void initDistributedBindings(py::module_& m) {
  // The base classes below are registered by torch.distributed's own bindings.
  py::module_::import("torch.distributed");

  py::class_<PythonBackend, c10d::Backend, c10::intrusive_ptr<PythonBackend>>(m, "_PythonBackend")
      .def(py::init<int, int, std::string, py::object>(), py::arg("rank"), py::arg("size"), py::arg("name"),
           py::arg("impl"))
      .def_property_readonly("impl", &PythonBackend::impl)
      .def("_set_host_allreduce",
           [](PythonBackend& self, c10::intrusive_ptr<c10d::Backend> transport, std::vector<at::ScalarType> dtypes,
              std::string context, int rank) {
             self.setHostAllreduce(
                 distributed::HostAllreduce{std::move(transport), std::move(dtypes), std::move(context), rank});
           },
           py::arg("transport"), py::arg("dtypes"), py::arg("context"), py::arg("rank"))
      .def("_set_mismatch_check",
           [](PythonBackend& self, c10::intrusive_ptr<c10d::Backend> exchange, std::string where,
              std::string failure) {
             self.setMismatchCheck(distributed::MismatchCheck(std::move(exchange), std::move(where),
                                                              std::move(failure), self.getRank(), self.getSize()));
           },
           py::arg("exchange"), py::arg("where"), py::arg("failure"));

  // post: (kind, dst, src, divisor) tuples, see PostOp.
  py::class_<CollectiveWork, c10d::Work, c10::intrusive_ptr<CollectiveWork>>(m, "_CollectiveWork")
      .def(py::init([](std::vector<c10::intrusive_ptr<c10d::Work>> transport, std::vector<at::Tensor> inputs,
                       std::vector<at::Tensor> outputs,
                       const std::vector<std::tuple<int, at::Tensor, at::Tensor, int64_t>>& post,
                       std::string context, int rank) {
             std::vector<PostOp> ops;
             for (const auto& [kind, dst, src, divisor] : post) {
               TORCH_CHECK(kind == PostOp::kCopy || kind == PostOp::kDiv, "unknown post-op ", kind);
               ops.push_back(PostOp{static_cast<PostOp::Kind>(kind), dst, src, divisor});
             }
             return c10::make_intrusive<CollectiveWork>(std::move(transport), std::move(inputs), std::move(outputs),
                                                        std::move(ops), std::move(context), rank);
           }),
           py::arg("transport"), py::arg("inputs"), py::arg("outputs"), py::arg("post"), py::arg("context"),
           py::arg("rank"))
      // AWS's neuron Work (and NCCL's) have it; c10d's Python Work does not bind getSequencenumber.
      .def("get_sequence_number", &CollectiveWork::getSequencenumber);
  m.def(
      "_quiesce_collectives",
      [](double timeout_s) {
        py::gil_scoped_release no_gil;  // transport threads may need the GIL to finish releasing
        return distributed::quiesceCollectives(
            std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
      },
      py::arg("timeout_s"));
  m.attr("_POST_COPY") = static_cast<int>(PostOp::kCopy);
  m.attr("_POST_DIV") = static_cast<int>(PostOp::kDiv);

}

} // namespace torchneuron::python
