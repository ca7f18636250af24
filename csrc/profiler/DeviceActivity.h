#pragma once
// Neuron device activity for PyTorch's profiler: one record per executed op, compiled graph piece and NKI
// kernel, on the stream it ran on, with the measured (simulator) time. The Kineto plugin (KinetoPlugin.cpp)
// turns the records of a profiling session into device activities linked to the CPU ops that launched them.
//
// Nothing here costs anything while no profiler records: the host path pays one relaxed atomic load
// (recording()) per op; everything else is out of line and only runs inside a session.
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/macros/Macros.h>
#include <c10/util/SmallVector.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace torchneuron::profiler {

namespace detail {
extern std::atomic<bool> g_recording;
} // namespace detail

// True while a Kineto session collects neuron activity (between its start() and stop()).
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed); }

struct TensorRecord {
  c10::SmallVector<int64_t, 5> sizes;
  c10::ScalarType dtype;
  bool written;
};

enum class ActivityKind : uint8_t { Op, Graph, Kernel, Copy };
const char* kindName(ActivityKind kind);

struct DeviceActivity {
  ActivityKind kind = ActivityKind::Op;
  std::string name;
  int device = 0;
  int stream = 0;
  int64_t start_ns = 0;  // unix-epoch ns, the clock Kineto's CPU events use
  int64_t end_ns = 0;
  // The innermost CPU op or record_function range open on the recording thread (0: none): the launcher.
  uint64_t correlation = 0;
  // Ops: the neuron tensors the kernel read or wrote, and the bytes it allocated and kept (its fresh outputs).
  std::vector<TensorRecord> tensors;
  int64_t out_bytes = 0;
  // The cost model's estimate for the target, in ns (< 0: none), and what it rests on (key -> JSON value).
  double estimated_ns = -1.0;
  std::vector<std::pair<std::string, std::string>> metadata;
};

int64_t nowNs();

// "aten::sum.dim_IntList" -> "aten::sum": the name PyTorch's profiler gives the CPU op.
std::string withoutOverload(const std::string& op_name);

// Adds a finished record to the running session (dropped when none runs). Fills the correlation ids from
// the calling thread, so call it on the thread that launched the work.
void record(DeviceActivity&& activity);

std::function<void()> timedCopy(std::function<void()> keep, const char* name, const at::Tensor& on_device,
                                size_t nbytes);

// The on_done callback of a runtime copy: keeps `keep` (the tensors) alive until the copy has run and,
// while a profiler records, makes the copy a device event (timed from submission to completion, so a copy
// queued behind earlier work on its stream includes the wait), linked to the op that issued it.
// `on_device` is the copy's neuron tensor: its device and current stream are the event's row.
template <class Keep>
std::function<void()> copyDone(Keep keep, const char* name, const at::Tensor& on_device, size_t nbytes) {
  if (C10_LIKELY(!recording())) return [keep = std::move(keep)] {};
  return timedCopy(std::function<void()>([keep = std::move(keep)] {}), name, on_device, nbytes);
}
// The device event of one host kernel: opened (and timed) only while recording; a kernel that throws leaves
// no event.
class OpActivity {
 public:
  OpActivity(const std::string& name, c10::DeviceIndex device, int stream) {
    if (C10_UNLIKELY(recording())) open(name, device, stream);
  }
  ~OpActivity() {
    if (C10_UNLIKELY(record_ != nullptr)) abandon();
  }
  OpActivity(const OpActivity&) = delete;
  OpActivity& operator=(const OpActivity&) = delete;

  bool isOpen() const { return record_ != nullptr; }
  void addTensor(const at::Tensor& t, bool written);
  void close();  // stamps the end time and records

 private:
  void open(const std::string& name, c10::DeviceIndex device, int stream);
  void abandon();
  friend void noteKernelBytes(int64_t delta);

  std::unique_ptr<DeviceActivity> record_;
  OpActivity* outer_ = nullptr;
};

// Device memory allocated (delta > 0) or freed by the calling thread while a host kernel's activity is open:
// what the kernel kept is its output. Fed by the caching allocator while a session records (startRecording
// installs an allocator/AllocationObserver.h hook).
void noteKernelBytes(int64_t delta);

// ---- session side (KinetoPlugin.cpp) ----
void startRecording();
std::vector<DeviceActivity> stopRecording();  // the session's records, in recording order
size_t droppedRecords();                      // records beyond the per-session cap

// Correlation ids Kineto pushes on the thread that enters a CPU op (or a record_function range).
void pushCorrelation(uint64_t id, bool user);
void popCorrelation(bool user);

// Fills estimated_ns and metadata of records that have none (the Python cost model, installed by the
// bindings). May throw; the session reports the error and keeps the measured times.
using Annotator = std::function<void(std::vector<DeviceActivity>&)>;
void setAnnotator(Annotator annotator);
const Annotator& annotator();

// The records of the last finished session, annotated (for torchneuron.profiler's tables and reports).
std::vector<DeviceActivity> lastSession();
void setLastSession(const std::vector<DeviceActivity>& records);

} // namespace torchneuron::profiler
