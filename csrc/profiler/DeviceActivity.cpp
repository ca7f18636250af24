#include "profiler/DeviceActivity.h"

#include <c10/util/ApproximateClock.h>

#include "allocator/AllocationObserver.h"
#include "device/Streams.h"

#include <iterator>
#include <mutex>

namespace torchneuron::profiler {

namespace detail {
std::atomic<bool> g_recording{false};
} // namespace detail

namespace {
// A long training run under an unscheduled profiler must not exhaust host memory: past this many records a
// session keeps counting but stops storing (reported through the session's errors()).
constexpr size_t kMaxRecords = size_t(1) << 22;

struct Store {
  std::mutex mutex;
  std::vector<DeviceActivity> records;
  size_t dropped = 0;
  std::vector<DeviceActivity> last;
  Annotator annotator;
};
Store& store() {
  static Store* s = new Store();  // leaked: records may arrive from threads during static teardown
  return *s;
}

// Ops and record_function ranges nest, so one stack holds both kinds (Kineto pops each kind separately).
struct Launcher {
  uint64_t id;
  bool user;
};
thread_local std::vector<Launcher> t_launchers;
thread_local OpActivity* t_open = nullptr;
} // namespace

const char* kindName(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::Op: return "op";
    case ActivityKind::Graph: return "graph";
    case ActivityKind::Kernel: return "kernel";
    case ActivityKind::Copy: return "copy";
  }
  return "op";
}

int64_t nowNs() { return static_cast<int64_t>(c10::getTime()); }

std::string withoutOverload(const std::string& op_name) {
  const size_t ns = op_name.find("::");
  const size_t dot = op_name.find('.', ns == std::string::npos ? 0 : ns + 2);
  return dot == std::string::npos ? op_name : op_name.substr(0, dot);
}

void append(DeviceActivity&& activity) {
  if (!recording()) return;
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.records.size() >= kMaxRecords) {
    s.dropped += 1;
    return;
  }
  s.records.push_back(std::move(activity));
}

void record(DeviceActivity&& activity) {
  if (!t_launchers.empty()) activity.correlation = t_launchers.back().id;
  append(std::move(activity));
}

std::function<void()> timedCopy(std::function<void()> keep, const char* name, const at::Tensor& on_device,
                                size_t nbytes) {
  auto r = std::make_shared<DeviceActivity>();
  r->kind = ActivityKind::Copy;
  r->name = name;
  r->device = on_device.device().index();
  r->stream = static_cast<int>(currentStream(on_device.device().index()).id());
  // The copy may complete on the stream's worker thread: the launcher is the op running here, now.
  if (!t_launchers.empty()) r->correlation = t_launchers.back().id;
  const c10::ScalarType bytes = c10::ScalarType::Byte;
  r->tensors.push_back(TensorRecord{{static_cast<int64_t>(nbytes)}, bytes, false});
  r->tensors.push_back(TensorRecord{{static_cast<int64_t>(nbytes)}, bytes, true});
  r->start_ns = nowNs();
  return [r, keep = std::move(keep)] {
    r->end_ns = nowNs();
    append(std::move(*r));
  };
}

void OpActivity::open(const std::string& name, c10::DeviceIndex device, int stream) {
  record_ = std::make_unique<DeviceActivity>();
  record_->kind = ActivityKind::Op;
  record_->name = name;
  record_->device = device;
  record_->stream = stream;
  outer_ = t_open;
  t_open = this;
  record_->start_ns = nowNs();
}

void OpActivity::addTensor(const at::Tensor& t, bool written) {
  if (record_ == nullptr || !t.defined()) return;
  record_->tensors.push_back(TensorRecord{c10::SmallVector<int64_t, 5>(t.sizes().begin(), t.sizes().end()),
                                          t.scalar_type(), written});
}

void OpActivity::close() {
  if (record_ == nullptr) return;
  record_->end_ns = nowNs();
  t_open = outer_;
  record(std::move(*record_));
  record_.reset();
}

void OpActivity::abandon() {
  t_open = outer_;
  record_.reset();
}

void noteKernelBytes(int64_t delta) {
  if (t_open != nullptr && t_open->record_ != nullptr) t_open->record_->out_bytes += delta;
}

namespace {
// The allocator's observer while a session records: an allocation counts only while recording (as it did when
// the allocator asked recording() itself), so the moments the observer is installed and removed do not matter.
void noteAllocation(int64_t delta) {
  if (recording()) noteKernelBytes(delta);
}
} // namespace

void startRecording() {
  Store& s = store();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.records.clear();
    s.dropped = 0;
  }
  setAllocationObserver(&noteAllocation);
  detail::g_recording.store(true, std::memory_order_relaxed);
}

std::vector<DeviceActivity> stopRecording() {
  detail::g_recording.store(false, std::memory_order_relaxed);
  setAllocationObserver(nullptr);
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  return std::move(s.records);
}

size_t droppedRecords() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.dropped;
}

void pushCorrelation(uint64_t id, bool user) { t_launchers.push_back({id, user}); }

void popCorrelation(bool user) {
  for (auto it = t_launchers.rbegin(); it != t_launchers.rend(); ++it) {
    if (it->user == user) {
      t_launchers.erase(std::next(it).base());
      return;
    }
  }
}

void setAnnotator(Annotator annotator) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.annotator = std::move(annotator);
}

const Annotator& annotator() { return store().annotator; }

std::vector<DeviceActivity> lastSession() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.last;
}

void setLastSession(const std::vector<DeviceActivity>& records) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.last = records;
}

} // namespace torchneuron::profiler
