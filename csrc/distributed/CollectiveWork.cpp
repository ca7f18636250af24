#include "distributed/CollectiveWork.h"

#include <ATen/core/ivalue_inl.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "device/Streams.h"

namespace torchneuron::distributed {

namespace {

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

void applyPostOps(const std::vector<PostOp>& post) {
  for (const PostOp& op : post) {
    switch (op.kind) {
      case PostOp::kCopy:
        op.dst.copy_(op.src);
        break;
      case PostOp::kDiv:
        if (c10::isIntegralType(op.dst.scalar_type(), /*includeBool=*/true)) {
          op.dst.div_(op.divisor, "trunc");
        } else {
          op.dst.div_(op.divisor);
        }
        break;
    }
  }
}

// A transport Work's completion as a Future. Some gloo Works (reduce_scatter, send, recv) have none: a
// thread waits for those (gloo applies the group's timeout, so it always ends).
c10::intrusive_ptr<c10::ivalue::Future> completionOf(const c10::intrusive_ptr<c10d::Work>& work) {
  try {
    return work->getFuture();
  } catch (const c10::Error&) {
  }
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
  std::thread([work, future] {
    try {
      work->wait();
      future->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
    } catch (...) {
      future->setError(std::current_exception());
    }
  }).detach();
  return future;
}

// Polls `done` with a growing pause (50 us to 5 ms: short collectives finish fast, long ones must not spin)
// until it is true (returns true) or `deadline` passes (false).
template <class Done>
bool pollUntil(const Done& done, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::microseconds(50);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  return true;
}

// Everything one collective keeps alive until its transfer is over, even if the user drops the Work.
struct Pending {
  std::vector<c10::intrusive_ptr<c10d::Work>> transport;
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> completions;  // one per transport Work
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
  std::vector<PostOp> post;
  c10::intrusive_ptr<c10::ivalue::Future> done;  // the Work's future: outputs, after the post-ops ran
  std::string context;

  // True once no transport thread holds any of it: then dropping it cannot be a transport thread's job.
  bool releasedByTransport(long holders) const {
    for (const auto& w : transport) {
      if (w.use_count() != 1) return false;
    }
    for (const auto& f : completions) {
      if (f.use_count() > 2) return false;  // this + the transport Work that owns it
    }
    return holders == 1;
  }
};

// Completed collectives wait here to be released on a user thread. Since torch 2.13 every C++ reference to
// a tensor Python has seen keeps its PyObject alive, so the last release takes the GIL; a transport thread
// (gloo's worker) that does so while the interpreter finalizes is killed by CPython inside a noexcept
// destructor, which aborts the process ("terminate called without an active exception") after a clean run.
class Retired {
 public:
  void add(std::shared_ptr<Pending> p) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(std::move(p));
    --in_flight_;
  }
  void started() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
  }
  // Releases, on the calling (user) thread, what no transport thread holds any more; true when nothing is
  // left in flight or waiting.
  bool reap() {
    std::vector<std::shared_ptr<Pending>> done;
    bool empty;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto keep = entries_.begin();
      for (auto& e : entries_) {
        if (e->releasedByTransport(e.use_count())) {
          done.push_back(std::move(e));
        } else {
          *keep++ = std::move(e);
        }
      }
      entries_.erase(keep, entries_.end());
      empty = entries_.empty() && in_flight_ == 0;
    }
    return empty;  // `done` is released here, outside the lock
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Pending>> entries_;
  int64_t in_flight_ = 0;
};

Retired& retired() {
  static auto* r = new Retired();  // never destroyed: what is left at process exit is left to the OS
  return *r;
}

void settle(Pending& p, c10::ivalue::Future& all) {
  try {
    if (all.hasError()) {
      C10_THROW_ERROR(DistBackendError, p.context + ": " + describe(all.exception_ptr()));
    }
    for (const auto& f : p.completions) {
      if (f->hasError()) {
        C10_THROW_ERROR(DistBackendError, p.context + ": " + describe(f->exception_ptr()));
      }
    }
    applyPostOps(p.post);
  } catch (...) {
    p.done->setError(std::current_exception());
    return;
  }
  p.done->markCompleted(c10::IValue(p.outputs));
}

} // namespace

bool quiesceCollectives(std::chrono::milliseconds timeout) {
  return pollUntil([] { return retired().reap(); }, std::chrono::steady_clock::now() + timeout);
}

CollectiveWork::CollectiveWork(std::vector<c10::intrusive_ptr<c10d::Work>> transport, std::vector<at::Tensor> inputs,
                               std::vector<at::Tensor> outputs, std::vector<PostOp> post, std::string context,
                               int rank)
    : Work(rank), transport_(std::move(transport)), outputs_(std::move(outputs)), context_(std::move(context)) {
  TORCH_CHECK(!transport_.empty(), context_, ": a collective needs at least one transport operation");
  retired().reap();
  auto pending = std::make_shared<Pending>();
  pending->transport = transport_;
  for (const auto& w : transport_) {
    pending->completions.push_back(completionOf(w));
  }
  pending->inputs = std::move(inputs);
  pending->outputs = outputs_;
  pending->post = std::move(post);
  pending->context = context_;
  pending->done = future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
  c10::intrusive_ptr<c10::ivalue::Future> all;
  if (pending->completions.size() == 1) {
    all = pending->completions[0];
  } else {
    c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(c10::FutureType::create(c10::AnyType::get()));
    for (const auto& f : pending->completions) {
      futures.push_back(f);
    }
    all = c10::collectAll(futures);
  }
  retired().started();
  // The callback runs on the thread that completes the transfer (a gloo worker on the simulator), without
  // the GIL: post-ops are plain ATen calls on host views. It hands what it kept alive to a user thread.
  all->addCallback([pending](c10::ivalue::Future& parent) mutable {
    settle(*pending, parent);
    retired().add(std::move(pending));
  });
}

bool CollectiveWork::isCompleted() { return future_->completed(); }

bool CollectiveWork::isSuccess() const { return future_->completed() && !future_->hasError(); }

std::exception_ptr CollectiveWork::exception() const {
  return future_->completed() ? future_->exception_ptr() : nullptr;
}

int CollectiveWork::sourceRank() const { return transport_.front()->sourceRank(); }

std::vector<at::Tensor> CollectiveWork::result() { return outputs_; }

bool CollectiveWork::wait(std::chrono::milliseconds timeout) {
  // Only the completion futures are waited on: some transport Works (gloo's send/recv) complete one waiter
  // each, and their waiter thread is already waiting.
  if (timeout == kNoTimeout) {
    future_->wait();
  } else {
    TORCH_CHECK_WITH(DistBackendError,
                     pollUntil([this] { return future_->completed(); }, std::chrono::steady_clock::now() + timeout),
                     context_, ": not finished within wait(timeout=", timeout.count(), " ms)");
  }
  retired().reap();
  if (future_->hasError()) {
    std::rethrow_exception(future_->exception_ptr());
  }
  return true;
}

void CollectiveWork::blockCurrentStream() {
  const at::Tensor* device_tensor = nullptr;
  for (const auto& t : outputs_) {
    if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) {
      device_tensor = &t;
      break;
    }
  }
  if (device_tensor == nullptr) {
    wait();
    return;
  }
  currentQueue(device_tensor->device().index())
      ->submit(
          [future = future_] {
            future->wait();
            if (future->hasError()) {
              std::rethrow_exception(future->exception_ptr());
            }
          },
          /*async=*/true);
}

void CollectiveWork::synchronize() { blockCurrentStream(); }

void CollectiveWork::abort() {
  for (const auto& w : transport_) {
    w->abort();
  }
}

c10::intrusive_ptr<c10::ivalue::Future> CollectiveWork::getFuture() { return future_; }

} // namespace torchneuron::distributed
