#pragma once
// An ordered work queue: the simulator's model of one NeuronCore stream (one nrta queue per execution unit
// on hardware). Work runs in submission order; each submission gets a sequence number and completion is
// observable through it, which is what events and the allocator's record_stream build on.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace torchneuron {

class Queue {
 public:
  explicit Queue(std::string name);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Runs `work` after everything submitted before it. With `async` the caller does not wait; otherwise
  // (and under NEURON_LAUNCH_BLOCKING=1) it runs on the calling thread once the queue has drained.
  // Returns the sequence number that completes when `work` has run.
  uint64_t submit(std::function<void()> work, bool async);

  // Makes later work on this queue wait until `other` completes `seq` (a cross-stream event wait).
  void waitFor(const std::shared_ptr<Queue>& other, uint64_t seq);

  // Blocks until everything submitted so far has run; rethrows the first error raised by async work.
  void drain();
  // Cheap check used before every inline kernel: true when no submitted work is outstanding.
  // completed_ only ever names a prefix of the sequence (every seq <= completed_ has run), so this and
  // isComplete hold however many threads submit at once.
  bool idle() const {
    return completed_.load(std::memory_order_acquire) == submitted_.load(std::memory_order_acquire);
  }

  uint64_t lastSubmitted() const { return submitted_.load(std::memory_order_acquire); }
  bool isComplete(uint64_t seq) const { return completed_.load(std::memory_order_acquire) >= seq; }
  void waitUntil(uint64_t seq);

 private:
  void workerLoop();
  void ensureWorker();
  void rethrowPendingError();
  // Destroys the closures of completed async work on the calling (user) thread: what they keep alive may be
  // tensors whose release needs the Python GIL, which the worker thread must never wait for.
  void reapFinished();
  // Records that `seq` ran and advances completed_ over every contiguous finished seq. Work finishes out of
  // order when several threads submit to one queue (inline work runs on each caller's thread, async work on
  // the worker), so a finished seq above the prefix waits in finished_early_. Caller holds mutex_.
  void markCompleteLocked(uint64_t seq);

  const std::string name_;
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> completed_{0};
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::pair<uint64_t, std::function<void()>>> tasks_;
  std::vector<std::function<void()>> finished_;
  std::set<uint64_t> finished_early_;
  std::thread worker_;
  bool stop_ = false;
  std::exception_ptr error_;
  // Set with error_ so drain() can skip the lock when no async work failed (the common case).
  std::atomic<bool> has_error_{false};
};

// The queues of `devices` devices, `streams` each, named neuron:<d>/stream<s>. A queue starts no thread until
// async work arrives, so they are all made up front and queue() needs no lock on the per-op path.
std::vector<std::vector<std::shared_ptr<Queue>>> makeQueues(int devices, int streams);

// NEURON_LAUNCH_BLOCKING=1 turns every async submission into a synchronous one.
void setLaunchBlocking(bool blocking);
bool launchBlocking();

} // namespace torchneuron
