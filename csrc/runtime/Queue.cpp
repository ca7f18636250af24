#include "runtime/Queue.h"

#include <c10/util/Exception.h>

namespace torchneuron {

namespace {
std::atomic<bool> g_launch_blocking{false};
} // namespace

void setLaunchBlocking(bool blocking) { g_launch_blocking.store(blocking); }
bool launchBlocking() { return g_launch_blocking.load(std::memory_order_relaxed); }

std::vector<std::vector<std::shared_ptr<Queue>>> makeQueues(int devices, int streams) {
  std::vector<std::vector<std::shared_ptr<Queue>>> queues(devices);
  for (int d = 0; d < devices; ++d) {
    for (int s = 0; s < streams; ++s) {
      queues[d].push_back(std::make_shared<Queue>("neuron:" + std::to_string(d) + "/stream" + std::to_string(s)));
    }
  }
  return queues;
}

Queue::Queue(std::string name) : name_(std::move(name)) {}

Queue::~Queue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) {
    // At interpreter exit the worker may already be gone with the process image; never block exit on it.
    worker_.detach();
  }
}

void Queue::ensureWorker() {
  if (!worker_.joinable()) {
    worker_ = std::thread([this] { workerLoop(); });
  }
}

void Queue::reapFinished() {
  std::vector<std::function<void()>> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_.empty()) return;
    done.swap(finished_);
  }
  // `done` is destroyed here, outside the lock, on the caller's thread.
}

uint64_t Queue::submit(std::function<void()> work, bool async) {
  reapFinished();
  if (!async || launchBlocking()) {
    drain();
    work();  // inline: the queue is drained, so running now keeps submission order
    // The seq is taken after the work ran, under the lock, so no thread ever waits for an inline seq that
    // is still running; async work other threads submitted meanwhile keeps completed_ below this seq until it
    // has run too.
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seq = submitted_.fetch_add(1) + 1;
      markCompleteLocked(seq);
    }
    done_cv_.notify_all();
    return seq;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ensureWorker();
  uint64_t seq = submitted_.fetch_add(1) + 1;
  tasks_.emplace_back(seq, std::move(work));
  work_cv_.notify_one();
  return seq;
}

void Queue::waitFor(const std::shared_ptr<Queue>& other, uint64_t seq) {
  if (other.get() == this || other->isComplete(seq)) {
    return;  // already satisfied: nothing to order
  }
  std::weak_ptr<Queue> weak = other;
  submit(
      [weak, seq] {
        if (auto q = weak.lock()) {
          q->waitUntil(seq);
        }
      },
      /*async=*/true);
}

void Queue::markCompleteLocked(uint64_t seq) {
  uint64_t done = completed_.load(std::memory_order_relaxed);
  if (seq != done + 1) {
    finished_early_.insert(seq);
    return;
  }
  done = seq;
  while (!finished_early_.empty() && *finished_early_.begin() == done + 1) {
    finished_early_.erase(finished_early_.begin());
    ++done;
  }
  completed_.store(done, std::memory_order_release);
}

void Queue::waitUntil(uint64_t seq) {
  if (isComplete(seq)) {
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return completed_.load() >= seq; });
}

void Queue::drain() {
  if (!idle()) {
    waitUntil(submitted_.load());
  }
  reapFinished();
  if (has_error_.load(std::memory_order_acquire)) {
    rethrowPendingError();
  }
}

void Queue::rethrowPendingError() {
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(err, error_);
    has_error_.store(false, std::memory_order_release);
  }
  if (err) {
    std::rethrow_exception(err);
  }
}

void Queue::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (stop_ && tasks_.empty()) {
      return;
    }
    auto [seq, work] = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    try {
      work();
    } catch (...) {
      std::lock_guard<std::mutex> elock(mutex_);
      if (!error_) {
        error_ = std::current_exception();  // surfaces at the next synchronisation point, as on hardware
        has_error_.store(true, std::memory_order_release);
      }
    }
    lock.lock();
    finished_.push_back(std::move(work));
    markCompleteLocked(seq);
    done_cv_.notify_all();
  }
}

} // namespace torchneuron
