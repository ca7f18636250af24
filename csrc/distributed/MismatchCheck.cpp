#include "distributed/MismatchCheck.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <cstring>
#include <sstream>

namespace torchneuron::distributed {

namespace {

// One rank's row in the exchanged table.
enum Field : int { kOp = 0, kDtype, kCount, kNumel, kDims, kShape };
constexpr int kMaxDims = 6;  // dimensions of the first tensor shown in the message
constexpr int kRow = kShape + kMaxDims;

// Ranks send an index, not the name: the message shows a peer's collective by looking it up here.
constexpr const char* kOps[] = {"all_reduce",
                                "all_reduce_coalesced",
                                "reduce",
                                "broadcast",
                                "all_gather",
                                "all_gather_coalesced",
                                "all_gather_into_tensor",
                                "all_gather_into_tensor_coalesced",
                                "gather",
                                "scatter",
                                "reduce_scatter",
                                "reduce_scatter_tensor",
                                "reduce_scatter_tensor_coalesced"};
constexpr int kNumOps = sizeof(kOps) / sizeof(kOps[0]);

int64_t opIndex(const char* op) {
  for (int i = 0; i < kNumOps; ++i) {
    if (std::strcmp(kOps[i], op) == 0) return i;
  }
  TORCH_INTERNAL_ASSERT(false, "MismatchCheck: unknown collective ", op);
  return -1;
}

std::string describeRow(const int64_t* row) {
  std::ostringstream s;
  const int64_t op = row[kOp];
  s << (op >= 0 && op < kNumOps ? kOps[op] : "?") << " of ";
  if (row[kCount] == 0) {
    s << "no tensors";
    return s.str();
  }
  if (row[kDtype] >= 0) {
    s << c10::getDtypeNames(static_cast<c10::ScalarType>(row[kDtype])).first;
  } else {
    s << "mixed dtypes";
  }
  s << "[";
  const int64_t dims = row[kDims];
  for (int64_t d = 0; d < std::min<int64_t>(dims, kMaxDims); ++d) {
    s << (d ? ", " : "") << row[kShape + d];
  }
  s << (dims > kMaxDims ? ", ...]" : "]");
  if (row[kCount] > 1) {
    s << " and " << row[kCount] - 1 << " more tensors, " << row[kNumel] << " elements in all";
  }
  return s.str();
}

} // namespace

MismatchCheck::MismatchCheck(c10::intrusive_ptr<c10d::Backend> exchange, std::string where, std::string failure,
                             int rank, int size)
    : exchange_(std::move(exchange)),
      where_(std::move(where)),
      failure_(std::move(failure)),
      rank_(rank),
      size_(size) {}

void MismatchCheck::agree(const char* op, const std::vector<at::Tensor>& tensors) const {
  auto mine = at::empty({kRow}, at::kLong);
  int64_t* row = mine.data_ptr<int64_t>();
  std::fill(row, row + kRow, 0);
  row[kOp] = opIndex(op);
  row[kCount] = static_cast<int64_t>(tensors.size());
  row[kDtype] = tensors.empty() ? -1 : static_cast<int64_t>(tensors[0].scalar_type());
  for (const auto& t : tensors) {
    row[kNumel] += t.numel();
    if (t.scalar_type() != tensors[0].scalar_type()) row[kDtype] = -1;
  }
  if (!tensors.empty()) {
    const auto sizes = tensors[0].sizes();
    row[kDims] = static_cast<int64_t>(sizes.size());
    for (size_t d = 0; d < sizes.size() && d < kMaxDims; ++d) row[kShape + d] = sizes[d];
  }

  auto all = at::empty({size_ * kRow}, at::kLong);
  c10d::AllgatherOptions opts;
  try {
    exchange_->_allgather_base(all, mine, opts)->wait();
  } catch (const std::exception& e) {
    const c10::Error* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string context = failure_;
    const auto at = context.find("{what}");
    if (at != std::string::npos) context.replace(at, 6, op);
    C10_THROW_ERROR(DistBackendError, context + ": " + (c10_error ? c10_error->what_without_backtrace() : e.what()));
  }

  const int64_t* table = all.data_ptr<int64_t>();
  bool same = true;
  for (int r = 0; r < size_ && same; ++r) {
    const int64_t* other = table + r * kRow;
    same = other[kOp] == row[kOp] && other[kDtype] == row[kDtype] && other[kNumel] == row[kNumel];
  }
  if (same) return;
  std::ostringstream msg;
  msg << "neuron process group: " << op << " got different tensors on the ranks (" << where_ << "):";
  for (int r = 0; r < size_; ++r) {
    msg << (r ? "; " : " ") << "rank " << r << ": " << describeRow(table + r * kRow);
  }
  msg << ". Every rank must pass the same collective with the same dtype and number of elements; nothing was "
         "transferred. TORCH_DISTRIBUTED_DEBUG=DETAIL also reports the first collective issued in a different "
         "order";
  C10_THROW_ERROR(DistBackendError, msg.str());
}

} // namespace torchneuron::distributed
