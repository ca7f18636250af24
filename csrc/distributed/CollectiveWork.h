#pragma once
// The c10d Work of one neuron collective. The collective itself is carried out by transport Works (on the
// simulator: gloo over host views of the device buffers); this object adds what the transport cannot know:
// the user's (neuron) output tensors as the result, small fix-ups once the transfer is done (AVG's
// division, copying a staging buffer back), errors that name the collective and the group, and
// ordering on the neuron stream (blockCurrentStream).
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace torchneuron::distributed {

// Applied in order to transport buffers (host views on the simulator) once every transport Work completed.
struct PostOp {
  enum Kind : int { kCopy = 0, kDiv = 1 };
  Kind kind;
  at::Tensor dst;
  at::Tensor src;       // kCopy: copied into dst
  int64_t divisor = 1;  // kDiv: dst /= divisor (truncating for integer dtypes, as NCCL's integer AVG)
};

class CollectiveWork : public c10d::Work {
 public:
  // `context` prefixes every error ("neuron process group (rank 1/2): all_reduce"); `inputs` and
  // `outputs` (device tensors) stay alive until the transfer has finished, even if this Work is dropped.
  CollectiveWork(std::vector<c10::intrusive_ptr<c10d::Work>> transport, std::vector<at::Tensor> inputs,
                 std::vector<at::Tensor> outputs, std::vector<PostOp> post, std::string context, int rank);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  // Blocks the caller until the collective is done (or `timeout` passes), rethrowing its error.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  // Later work on the current neuron stream of the outputs' device waits for the collective; the caller
  // does not block. A failure surfaces at the stream's next synchronisation point.
  void synchronize() override;
  void blockCurrentStream() override;
  void abort() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // The group's collective count when this one was issued (PythonBackend stamps it): Work.get_sequence_number(),
  // as AWS's neuron Work and NCCL's have; the same on every rank for the same collective.
  uint64_t getSequencenumber() const override { return seq_; }
  void setSequenceNumber(uint64_t seq) { seq_ = seq; }

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> transport_;
  std::vector<at::Tensor> outputs_;
  std::string context_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // value: outputs_, after the post-ops ran
  uint64_t seq_ = 0;
};

// Releases, on the calling thread, what completed collectives kept alive once no transport thread holds
// it; waits up to `timeout` for collectives still in flight. True when nothing is left. Called at exit
// and by destroy_process_group so that no transport thread is releasing tensors while Python finalizes.
bool quiesceCollectives(std::chrono::milliseconds timeout);

} // namespace torchneuron::distributed
