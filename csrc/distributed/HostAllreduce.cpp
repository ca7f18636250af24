#include "distributed/HostAllreduce.h"

#include <algorithm>

#include "aten/native/HostAlias.h"
#include "device/Streams.h"
#include "distributed/CollectiveWork.h"

namespace torchneuron::distributed {

namespace {
bool nativeForEveryDtype(c10d::ReduceOp::RedOpType op) {
  // Bitwise ops are native too, but only for integers: collectives.py checks that (with its message).
  return op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::PRODUCT || op == c10d::ReduceOp::MIN ||
         op == c10d::ReduceOp::MAX;
}
} // namespace

c10::intrusive_ptr<c10d::Work> HostAllreduce::tryRun(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceOptions& opts) const {
  if (tensors.size() != 1 || !nativeForEveryDtype(opts.reduceOp.op_) || opts.sparseIndices.has_value()) {
    return nullptr;
  }
  const at::Tensor& t = tensors[0];
  if (t.device().type() != c10::DeviceType::PrivateUse1 || t.layout() != c10::kStrided || !t.is_contiguous() ||
      std::find(dtypes.begin(), dtypes.end(), t.scalar_type()) == dtypes.end()) {
    return nullptr;
  }
  // The transfer reads device memory on the host: earlier work queued on the current stream must be done.
  auto queue = currentQueue(t.device().index());
  if (!queue->idle()) {
    queue->drain();
  }
  std::vector<at::Tensor> views{hostAlias(t)};
  auto work = transport->allreduce(views, opts);
  return c10::make_intrusive<CollectiveWork>(std::vector<c10::intrusive_ptr<c10d::Work>>{work},
                                             std::vector<at::Tensor>{}, tensors, std::vector<PostOp>{}, context,
                                             rank);
}

} // namespace torchneuron::distributed
