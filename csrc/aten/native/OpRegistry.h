#pragma once
// Per-operator bookkeeping for eager execution: how often each op ran on neuron (torchneuron.executed_ops()),
// whether it is allowed to run (the lowering coverage policy, e.g. TORCHNEURON_FALLBACK=error), and the
// optional executor that replaces the host path (TORCHNEURON_EAGER=lowered). Python installs the policy and
// the executor through these hooks; this file knows nothing about Python.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <atomic>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

namespace torchneuron {

struct OpEntry {
  std::string name;  // "aten::add.Tensor"
  std::atomic<int64_t> count{0};
  std::atomic<bool> policy_checked{false};
  std::optional<std::string> refusal;  // set when the policy forbids the op
  // Schema facts the host path needs on every call, computed once.
  std::once_flag analysed;
  std::vector<bool> writes;         // argument i is mutated (Tensor(a!))
  std::vector<bool> is_generator;   // argument i is a Generator?
  std::vector<bool> is_index_list;  // argument i is Tensor?[] (indices may stay on the host, as on CUDA)
  // The routing epoch (see routingEpoch) in which this op was found free to take the unboxed host path (no
  // refusal, no executor); 0: not (yet) found so. One load and compare on the per-op path.
  std::atomic<uint32_t> direct_epoch{0};
};

// One more execution of the op, for torchneuron.executed_ops(). A statistic: a relaxed load and store, not a
// locked read-modify-write (which stalls the pipeline on every op); two threads running the same op at the
// same instant may count it once.
inline void countExecution(OpEntry& entry) {
  entry.count.store(entry.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Changes whenever the op policy or the eager executor does (never 0), so direct_epoch decisions expire.
uint32_t routingEpoch();

// Looked up once per call; entries live for the process.
OpEntry& opEntry(const c10::OperatorHandle& op);

using OpPolicyFn = std::optional<std::string> (*)(const std::string& op_name);
// Returns true when it executed the op (outputs pushed on the stack), false to use the host path.
using EagerExecutorFn = bool (*)(const c10::OperatorHandle& op, torch::jit::Stack* stack);

void setOpPolicy(OpPolicyFn fn);
void setEagerExecutor(EagerExecutorFn fn);
// The nrt runtime's executor (each op as a NEFF); used only once an nrt runtime exists, where device memory is
// not host memory and the host kernels cannot run on it directly.
void setNrtExecutor(EagerExecutorFn fn);
OpPolicyFn opPolicy();
// The executor that replaces the host path for this process: on nrt the nrt one, else strict mode's (or none).
EagerExecutorFn eagerExecutor();
// Forgets cached policy decisions (after the policy changes).
void resetOpPolicyDecisions();

std::map<std::string, int64_t> executedOps();
void resetExecutedOps();

} // namespace torchneuron
