// The neuron activity profiler Kineto runs next to its CPU tracer: torch.profiler.profile(activities=[CPU,
// PrivateUse1]) puts PyTorch in KINETO_PRIVATEUSE1 mode, Kineto configures this plugin (registered through
// PyTorch's PrivateUse1 profiler registry), and each session returns the neuron device activity recorded
// between its start() and stop() as kernel / memcpy activities, linked by correlation id to the CPU ops that
// launched them. PyTorch then reports their time as device time (key_averages(), export_chrome_trace()).
#ifndef USE_KINETO
#define USE_KINETO  // PyTorch's wheels are built with Kineto; the registry header is guarded by this macro
#endif
// Kineto's headers format metadata with fmt, whose compiled part libtorch does not export: header-only here.
#define FMT_HEADER_ONLY
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <libkineto.h>
#include <output_base.h>

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "profiler/DeviceActivity.h"

namespace torchneuron::profiler {

namespace {

using libkineto::ActivityType;

// Device rows go below the CPU's in trace viewers.
constexpr int64_t kDeviceSortBase = 1 << 20;

std::string deviceName(int device) { return "neuron:" + std::to_string(device); }

class NeuronProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  // A session dropped while recording (a profiler torn down mid-trace) must not leave the host path recording.
  ~NeuronProfilerSession() override {
    if (status_ == libkineto::TraceStatus::RECORDING) stopRecording();
  }

  void start() override {
    startRecording();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    records_ = stopRecording();
    if (size_t dropped = droppedRecords(); dropped > 0) {
      errors_.push_back(fmt::format("neuron profiler: {} device activities beyond the per-session cap were not "
                                    "recorded; profile fewer steps (torch.profiler.schedule)", dropped));
    }
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked,
                    int64_t window_start, int64_t window_end) override {
    annotate();
    setLastSession(records_);
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(window_start, window_end, "neuron");
    for (const DeviceActivity& r : records_) {
      auto& act = *buffer_->activities.emplace_back(std::make_unique<libkineto::GenericTraceActivity>(
          buffer_->span, r.kind == ActivityKind::Copy ? ActivityType::GPU_MEMCPY : ActivityType::CONCURRENT_KERNEL,
          withoutOverload(r.name)));
      act.startTime = r.start_ns;
      act.endTime = std::max(r.end_ns, r.start_ns);
      act.device = r.device;
      act.resource = r.stream;
      act.threadId = r.stream;
      act.id = static_cast<int32_t>(++next_id_);
      if (r.correlation != 0) act.linked = linked(static_cast<int32_t>(r.correlation));
      act.addMetadataQuoted("device", deviceName(r.device));
      act.addMetadata("stream", r.stream);
      act.addMetadataQuoted("kind", kindName(r.kind));
      if (r.kind == ActivityKind::Op) act.addMetadataQuoted("op", r.name);
      act.addMetadata("sim_us", fmt::format("{:.3f}", static_cast<double>(act.endTime - act.startTime) / 1e3));
      if (r.estimated_ns >= 0) act.addMetadata("est_trn_us", fmt::format("{:.3f}", r.estimated_ns / 1e3));
      for (const auto& [key, json] : r.metadata) act.addMetadata(key, json);
      streams_[r.device].insert(r.stream);
      act.log(logger);
    }
    // One DeviceInfo comes back through getDeviceInfo(); the other devices' rows are named here.
    for (const auto& [device, streams] : streams_) {
      if (device != firstDevice()) logger.handleDeviceInfo(deviceInfo(device), window_start);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(deviceInfo(firstDevice()));
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& [device, streams] : streams_) {
      for (int s : streams) {
        out.push_back(libkineto::ResourceInfo{s, s, device, deviceName(device) + " stream " + std::to_string(s)});
      }
    }
    return out;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { pushCorrelation(id, /*user=*/false); }
  void popCorrelationId() override { popCorrelation(/*user=*/false); }
  void pushUserCorrelationId(uint64_t id) override { pushCorrelation(id, /*user=*/true); }
  void popUserCorrelationId() override { popCorrelation(/*user=*/true); }

 private:
  // Estimated Trainium time for the records that carry none (eager ops); a failing cost model costs the
  // estimate, never the trace.
  void annotate() {
    const Annotator& fn = annotator();
    if (!fn || records_.empty()) return;
    try {
      fn(records_);
    } catch (const std::exception& e) {
      errors_.push_back(std::string("neuron profiler: estimating Trainium time failed: ") + e.what());
    }
  }

  int firstDevice() const { return streams_.empty() ? 0 : streams_.begin()->first; }

  static libkineto::DeviceInfo deviceInfo(int device) {
    return libkineto::DeviceInfo{device, kDeviceSortBase + device, deviceName(device), deviceName(device)};
  }

  std::vector<DeviceActivity> records_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::map<int, std::set<int>> streams_;
  std::vector<std::string> errors_;
  int64_t next_id_ = 0;
};

class NeuronActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  // Called by Kineto when a trace is prepared: a session only when device activity was asked for
  // (ProfilerActivity.PrivateUse1 adds kernels and memcpys; a CPU-only trace asks for the runtime types only).
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& types,
                                                                 const libkineto::Config&) override {
    if (types.count(ActivityType::CONCURRENT_KERNEL) == 0 && types.count(ActivityType::GPU_MEMCPY) == 0) {
      return nullptr;
    }
    return std::make_unique<NeuronProfilerSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  const std::string name_{"neuron"};
  const std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                           ActivityType::PRIVATEUSE1_RUNTIME, ActivityType::PRIVATEUSE1_DRIVER};
};

} // namespace

REGISTER_PRIVATEUSE1_PROFILER(NeuronActivityProfiler);

} // namespace torchneuron::profiler
