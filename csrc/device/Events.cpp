#include "device/Events.h"

#include <c10/util/Exception.h>

#include <chrono>

#include "device/Streams.h"

namespace torchneuron {

namespace {
int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

void recordEvent(NeuronEvent& event, const c10::Stream& stream) {
  TORCH_CHECK(event.device < 0 || event.device == stream.device_index(), "neuron: event recorded on neuron:",
              static_cast<int>(event.device), " cannot be recorded on ", stream,
              "; create one event per device");
  event.device = stream.device_index();
  event.queue = queueOf(stream);
  // A re-recorded event is a new point in time: give it a fresh timestamp slot.
  event.time_ns = std::make_shared<std::atomic<int64_t>>(-1);
  auto slot = event.time_ns;
  bool busy = !event.queue->idle();
  event.seq = event.queue->submit([slot] { slot->store(nowNs()); }, /*async=*/busy);
  event.recorded = true;
}

void blockStreamOnEvent(const NeuronEvent& event, const c10::Stream& stream) {
  if (!event.recorded) return;  // as CUDA: waiting on a never-recorded event is a no-op
  queueOf(stream)->waitFor(event.queue, event.seq);
}

bool queryEvent(const NeuronEvent& event) { return !event.recorded || event.queue->isComplete(event.seq); }

void synchronizeEvent(const NeuronEvent& event) {
  if (event.recorded) event.queue->waitUntil(event.seq);
}

double elapsedMilliseconds(const NeuronEvent& start, const NeuronEvent& end) {
  TORCH_CHECK(start.timing && end.timing,
              "neuron: elapsed_time needs both events created with enable_timing=True");
  TORCH_CHECK(start.recorded && end.recorded, "neuron: elapsed_time needs both events to have been recorded");
  synchronizeEvent(start);
  synchronizeEvent(end);
  return static_cast<double>(end.time_ns->load() - start.time_ns->load()) / 1e6;
}

} // namespace torchneuron
