// DDP's per-iteration timing for neuron (what CudaTimer is for CUDA): without a timer registered for the
// device type, every DDP run warns that time stats are collected for CPU and CUDA only, and
// `_get_ddp_logging_data()` has no compute/communication times.
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>
#include <atomic>
#include <memory>

#include "device/Streams.h"
#include "runtime/Queue.h"

namespace torchneuron::distributed {

namespace {

constexpr size_t kEvents = 5;  // c10d::Timer::Event

class NeuronTimer final : public c10d::Timer {
 public:
  explicit NeuronTimer(c10::Device device) : device_(device.index()) {
    for (auto& t : device_ns_->times) {
      t.store(c10d::kUnsetTime);
    }
  }

  // The event happens when the current stream reaches it (as a CUDA event would), not when the host
  // enqueues it: a marker on the stream stamps the time.
  void record(Event event) override {
    Timer::record(event);  // host-side time, which DDP reads through getTimestamp()
    const auto i = static_cast<size_t>(event);
    auto queue = currentQueue(device_);
    auto times = device_ns_;
    times->times[i].store(c10d::kUnsetTime);
    marks_[i] = {queue, queue->submit([times, i] { times->times[i].store(c10d::current_time_in_nanos()); },
                                      /*async=*/true)};
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    const auto s = static_cast<size_t>(start), e = static_cast<size_t>(end);
    if (!marks_[s].queue || !marks_[e].queue) {
      return std::nullopt;
    }
    marks_[s].queue->waitUntil(marks_[s].seq);  // as CudaTimer synchronizes its events
    marks_[e].queue->waitUntil(marks_[e].seq);
    const int64_t t0 = device_ns_->times[s].load(), t1 = device_ns_->times[e].load();
    if (t0 == c10d::kUnsetTime || t1 == c10d::kUnsetTime || t1 < t0) {
      return std::nullopt;  // as CudaTimer: an end recorded before its start is no measurement
    }
    return t1 - t0;
  }

 private:
  struct Times {
    std::array<std::atomic<int64_t>, kEvents> times;
  };
  struct Mark {
    std::shared_ptr<Queue> queue;
    uint64_t seq = 0;
  };
  c10::DeviceIndex device_;
  std::shared_ptr<Times> device_ns_ = std::make_shared<Times>();  // shared with markers still queued
  std::array<Mark, kEvents> marks_{};
};

} // namespace

} // namespace torchneuron::distributed

namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, torchneuron::distributed::NeuronTimer)
} // namespace c10d
