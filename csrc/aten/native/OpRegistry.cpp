#include "aten/native/OpRegistry.h"

#include <c10/util/flat_hash_map.h>

#include <memory>
#include <mutex>
#include <vector>

namespace torchneuron {

namespace {
std::mutex g_mutex;
ska::flat_hash_map<const void*, OpEntry*> g_entries;  // keyed by the operator's schema object
std::vector<std::unique_ptr<OpEntry>> g_storage;
std::atomic<OpPolicyFn> g_policy{nullptr};
std::atomic<EagerExecutorFn> g_executor{nullptr};
std::atomic<uint32_t> g_epoch{1};

void nextEpoch() {
  uint32_t next = g_epoch.load() + 1;
  g_epoch.store(next == 0 ? 1 : next);
}
} // namespace

uint32_t routingEpoch() { return g_epoch.load(std::memory_order_acquire); }

OpEntry& lookupOrCreate(const c10::OperatorHandle& op, const void* key);

OpEntry& opEntry(const c10::OperatorHandle& op) {
  const void* key = &op.schema();
  // Entries are never removed, so a per-thread cache of them needs no lock on the per-op path.
  thread_local ska::flat_hash_map<const void*, OpEntry*> cache;
  auto hit = cache.find(key);
  if (C10_LIKELY(hit != cache.end())) return *hit->second;
  OpEntry& entry = lookupOrCreate(op, key);
  cache.emplace(key, &entry);
  return entry;
}

OpEntry& lookupOrCreate(const c10::OperatorHandle& op, const void* key) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_entries.find(key);
  if (C10_LIKELY(it != g_entries.end())) return *it->second;
  auto entry = std::make_unique<OpEntry>();
  const auto& name = op.operator_name();
  entry->name = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  OpEntry* raw = entry.get();
  g_storage.push_back(std::move(entry));
  g_entries.emplace(key, raw);
  return *raw;
}

void setOpPolicy(OpPolicyFn fn) {
  g_policy.store(fn);
  resetOpPolicyDecisions();
}

void setEagerExecutor(EagerExecutorFn fn) {
  g_executor.store(fn);
  nextEpoch();
}
OpPolicyFn opPolicy() { return g_policy.load(std::memory_order_acquire); }
EagerExecutorFn eagerExecutor() { return g_executor.load(std::memory_order_acquire); }

void resetOpPolicyDecisions() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& e : g_storage) {
    e->policy_checked.store(false);
    e->refusal.reset();
  }
  nextEpoch();
}

std::map<std::string, int64_t> executedOps() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::map<std::string, int64_t> out;
  for (auto& e : g_storage) {
    if (auto n = e->count.load()) out[e->name] += n;
  }
  return out;
}

void resetExecutedOps() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& e : g_storage) e->count.store(0);
}

} // namespace torchneuron
