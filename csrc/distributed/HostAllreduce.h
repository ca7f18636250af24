#pragma once
// The simulator's all_reduce without a trip through Python: the latency-bound case (small tensors, DDP's
// buckets) pays for every microsecond the host spends, so the plain case (one dense tensor, a reduce op the
// transport has natively) runs here: drain the stream, a host view, gloo, a CollectiveWork. Everything else
// (AVG, PREMUL_SUM, lists, bad input and its error messages) stays in torchneuron/distributed/collectives.py,
// which also decides what may take this path (the dtypes) and provides the error context.
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <string>
#include <vector>

namespace torchneuron::distributed {

struct HostAllreduce {
  c10::intrusive_ptr<c10d::Backend> transport;  // gloo, working on host views
  std::vector<c10::ScalarType> dtypes;          // what the transport carries
  std::string context;                          // error prefix for all_reduce
  int rank = -1;

  // A Work for the collective, or nullptr when it is not the plain case.
  c10::intrusive_ptr<c10d::Work> tryRun(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) const;
};

} // namespace torchneuron::distributed
