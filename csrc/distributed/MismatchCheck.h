#pragma once
// Before a collective's bytes move, the ranks compare what they pass: the collective, the dtype and the
// number of elements. A rank that passes 4 elements while its peer passes 6 would otherwise abort inside
// gloo's transport thread (SIGABRT, the interpreter gone) and leave garbage in the peer; one that passes
// int32 where its peer passes float32 would silently mix bit patterns. The comparison is one small
// all_gather on the group's host gloo, so every rank sees the same table and raises the same
// DistBackendError, naming the collective, each rank's shape and the ranks that differ.
// TORCH_DISTRIBUTED_DEBUG=DETAIL (PyTorch's ProcessGroupWrapper) checks more (op order, every tensor's
// shape) at the cost of a monitored barrier per collective.
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <string>
#include <vector>

namespace torchneuron::distributed {

class MismatchCheck {
 public:
  // `exchange`: a gloo group of the same ranks, working on CPU tensors. `where` ends up in the mismatch
  // error ("rank 0 of 2, process group '0'"); `failure`, with "{what}" replaced by the collective, prefixes
  // the error of an exchange that failed (a peer that exited), as it does the collective's own errors.
  MismatchCheck(c10::intrusive_ptr<c10d::Backend> exchange, std::string where, std::string failure, int rank,
                int size);

  // Throws DistBackendError on every rank when the ranks' `op` calls disagree on the dtype or the number
  // of elements of `tensors` (all of them counted; the first one's shape is what the message shows).
  void agree(const char* op, const std::vector<at::Tensor>& tensors) const;

 private:
  c10::intrusive_ptr<c10d::Backend> exchange_;
  std::string where_;
  std::string failure_;
  int rank_;
  int size_;
};

} // namespace torchneuron::distributed
