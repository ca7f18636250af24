#include "distributed/CollectiveWork.h"

#include <ATen/core/ivalue_inl.h>
#include <c10/util/Exception.h>

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

c10::intrusive_ptr<c10::ivalue::Future> allDone(const std::vector<c10::intrusive_ptr<c10d::Work>>& works) {
  if (works.size() == 1) {
    return completionOf(works[0]);
  }
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(c10::FutureType::create(c10::AnyType::get()));
  for (const auto& w : works) {
    futures.push_back(completionOf(w));
  }
  return c10::collectAll(futures);
}

} // namespace

CollectiveWork::CollectiveWork(std::vector<c10::intrusive_ptr<c10d::Work>> transport, std::vector<at::Tensor> inputs,
                               std::vector<at::Tensor> outputs, std::vector<PostOp> post, std::string context,
                               int rank)
    : Work(rank), transport_(std::move(transport)), outputs_(std::move(outputs)), context_(std::move(context)) {
  TORCH_CHECK(!transport_.empty(), context_, ": a collective needs at least one transport operation");
  // The callback runs on the thread that completes the transfer (a gloo worker on the simulator), without
  // the GIL: post-ops are plain ATen calls on host views. Capturing the tensors keeps device memory alive
  // until the transfer is over, as NCCL's record_stream does for CUDA.
  future_ = allDone(transport_)->then(
      [inputs = std::move(inputs), outputs = outputs_, post = std::move(post),
       context = context_](c10::ivalue::Future& parent) -> c10::IValue {
        if (parent.hasError()) {
          C10_THROW_ERROR(DistBackendError, context + ": " + describe(parent.exception_ptr()));
        }
        if (parent.value().isList()) {  // collectAll: one completed future per transport operation
          for (const c10::IValue& f : parent.value().toListRef()) {
            if (f.isFuture() && f.toFuture()->hasError()) {
              C10_THROW_ERROR(DistBackendError, context + ": " + describe(f.toFuture()->exception_ptr()));
            }
          }
        }
        applyPostOps(post);
        return c10::IValue(outputs);
      },
      c10::ListType::ofTensors());
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
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(50);
    while (!future_->completed()) {
      TORCH_CHECK_WITH(DistBackendError, std::chrono::steady_clock::now() < deadline, context_,
                       ": not finished within wait(timeout=", timeout.count(), " ms)");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(5000));
    }
  }
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
