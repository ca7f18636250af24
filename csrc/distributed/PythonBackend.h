#pragma once
// A c10d::Backend whose collectives are Python methods of an implementation object.
//
// PyTorch lets Python subclass ProcessGroup (which then replaces the whole group) but not Backend, and only a
// Backend slots into a group next to others ("cpu:gloo,neuron:neuron") and is reached by every C++ caller:
// the dispatcher's c10d ops, DDP's reducer, functional collectives. Each virtual here forwards to the method
// of the same name on `impl` (the names torch.distributed's Backend binding uses); a method `impl` does not
// define keeps c10d's "does not support" error.
#include <pybind11/pybind11.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <atomic>
#include <optional>
#include <string>

#include "distributed/HostAllreduce.h"
#include "distributed/MismatchCheck.h"

namespace torchneuron::distributed {

class PythonBackend : public c10d::Backend {
 public:
  PythonBackend(int rank, int size, std::string name, pybind11::object impl);
  ~PythonBackend() override;

  const pybind11::object& impl() const { return impl_; }
  // Lets plain all_reduces skip Python (the simulator's transport; see HostAllreduce.h).
  void setHostAllreduce(HostAllreduce fast) { host_allreduce_ = std::move(fast); }
  // Makes every collective whose ranks must agree on sizes compare them first (see MismatchCheck.h).
  void setMismatchCheck(MismatchCheck check) { mismatch_check_.emplace(std::move(check)); }

  const std::string getBackendName() const override { return name_; }
  bool supportsCoalescing() const override { return false; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void abort() override;
  void shutdown() override;
  void eagerConnectSingleDevice(at::Device device) override {}
  // The number of collectives issued on this group so far, the same on every rank (point-to-point ops are
  // not counted: only two ranks take part). TORCH_DISTRIBUTED_DEBUG=DETAIL's ProcessGroupWrapper compares it
  // across ranks before each collective.
  uint64_t getSequenceNumberForGroup() override { return seq_.load(); }
  void setSequenceNumberForGroup() override { seq_ = 0; }  // as gloo: every rank starts at 0

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

 private:
  // The bound method `name` of impl_, or None when impl_ does not implement it.
  pybind11::object method(const char* name) const;
  // Counts a collective and, when the ranks must agree on `tensors`, compares them across ranks.
  void enter(const char* op, const std::vector<at::Tensor>& tensors);
  void enter() { ++seq_; }  // a collective whose ranks may pass different sizes (all_to_all, barrier)

  const std::string name_;
  pybind11::object impl_;
  std::optional<HostAllreduce> host_allreduce_;
  std::optional<MismatchCheck> mismatch_check_;
  std::atomic<uint64_t> seq_{0};
  bool coalescing_ = false;
};

// Runs a Python call and turns a Python exception into the matching c10 error (so that it crosses C++
// frames that do not hold the GIL, and reaches Python again as ValueError, TypeError, DistBackendError...).
[[noreturn]] void rethrowPythonError(pybind11::error_already_set& e, const std::string& where);

} // namespace torchneuron::distributed
