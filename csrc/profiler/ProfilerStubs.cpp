// The ProfilerStubs of PyTorch's marker-based PrivateUse1 profiler, which PyTorch calls a fallback
// (ProfilerState::KINETO_PRIVATEUSE1_FALLBACK, i.e. torch.autograd.profiler.profile(use_device="neuron",
// use_kineto=False)): the profiler records a timed neuron event on the current stream before and after every
// op and reports the time between them as the op's device time (privateuse1_elapsed_us). The Kineto plugin
// (KinetoPlugin.cpp) is the full path.
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include <memory>

#include "device/Events.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron::profiler {

namespace {

struct NeuronProfilerStubs final : torch::profiler::impl::ProfilerStubs {
  // Called around every op while the marker-based profiler runs, on the op's thread.
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex index = currentDevice();
    if (device != nullptr) *device = index;
    auto ev = std::make_shared<NeuronEvent>();
    ev->timing = true;
    if (cpu_ns != nullptr) *cpu_ns = static_cast<int64_t>(c10::getTime());
    recordEvent(*ev, currentStream(index));
    *event = std::move(ev);
  }

  // Microseconds between two recorded events (waits for both, as cudaEventElapsedTime does).
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* start,
                const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    const auto* a = static_cast<const NeuronEvent*>(start->get());
    const auto* b = static_cast<const NeuronEvent*>(end->get());
    return static_cast<float>(elapsedMilliseconds(*a, *b) * 1000.0);
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = currentDevice();
    for (int i = 0; i < runtime().deviceCount(); ++i) {
      setCurrentDevice(static_cast<c10::DeviceIndex>(i));
      op(i);
    }
    setCurrentDevice(previous);
  }

  void synchronize() const override {
    for (int i = 0; i < runtime().deviceCount(); ++i) runtime().synchronize(i);
  }
};

const bool g_registered = [] {
  static NeuronProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

} // namespace

} // namespace torchneuron::profiler
