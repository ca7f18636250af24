#pragma once
// Events: a point in a stream's queue. Completion is the queue reaching the event's sequence number; the
// timestamp is taken when the queue gets there, so elapsed_time measures device-side order, as on hardware.
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/Queue.h"

namespace torchneuron {

struct NeuronEvent {
  c10::DeviceIndex device = -1;
  bool timing = false;
  bool recorded = false;
  std::shared_ptr<Queue> queue;
  uint64_t seq = 0;
  std::shared_ptr<std::atomic<int64_t>> time_ns = std::make_shared<std::atomic<int64_t>>(-1);
};

void recordEvent(NeuronEvent& event, const c10::Stream& stream);
void blockStreamOnEvent(const NeuronEvent& event, const c10::Stream& stream);
bool queryEvent(const NeuronEvent& event);
void synchronizeEvent(const NeuronEvent& event);
double elapsedMilliseconds(const NeuronEvent& start, const NeuronEvent& end);

} // namespace torchneuron
