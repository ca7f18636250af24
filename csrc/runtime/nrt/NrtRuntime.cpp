#include "runtime/nrt/NrtRuntime.h"

#include <c10/util/Exception.h>

#include <vector>

#include "runtime/nrt/NrtStatus.h"

namespace torchneuron {

namespace {
// nrt.h's instance enums as the names AWS gives the instances ("trn2" + "48xlarge").
std::string instanceName(const nrt_instance_info_t& info) {
  static const char* kFamilies[] = {"unknown", "inf1", "trn1", "trn1n", "inf2", "trn2", "trn2n", "inf2e",
                                    "trn2p", "trn2u", "trn2e", "trn2eu", "trn2ac", "trn2uac", "trn3", "trn3pds98"};
  static const char* kSizes[] = {"xlarge", "2xlarge", "4xlarge", "6xlarge", "8xlarge", "24xlarge", "32xlarge",
                                 "48xlarge", "3xlarge"};
  std::string family = info.family < sizeof(kFamilies) / sizeof(*kFamilies) ? kFamilies[info.family] : "unknown";
  std::string size = info.size < sizeof(kSizes) / sizeof(*kSizes) ? kSizes[info.size] : "unknown-size";
  return family + "." + size;
}

std::string at(int device) { return "neuron:" + std::to_string(device); }
} // namespace

NrtRuntime::NrtRuntime(std::shared_ptr<const NrtLibrary> lib, const RuntimeConfig& config) : lib_(std::move(lib)) {
  const std::string where = "this host (libnrt " + lib_->version + " at " + lib_->path + ")";
  nrt_instance_info_t info{};
  checkNrt(lib_->nrt_get_instance_info(&info, sizeof info), "nrt_get_instance_info", where);
  const TargetInfo* target = targetForNrtFamily(static_cast<int>(info.family));
  TORCH_CHECK(target != nullptr, "neuron: this instance (", instanceName(info), ", libnrt family ", info.family,
              ") has no Trainium NeuronCores torchneuron supports; use TORCHNEURON_RUNTIME=sim to run on the "
              "simulator instead");
  target_ = *target;
  target_.instance = instanceName(info);
  if (config.lnc > 0) target_.lnc = config.lnc;

  int status = lib_->nrt_init(NRT_FRAMEWORK_TYPE_PYTORCH, config.framework_version.c_str(),
                              config.fal_version.c_str());
  if (status != NRT_SUCCESS) {
    // Cores reserved by another process is the common cause; libnrt logs which ("NeuronCore(s) not available").
    TORCH_CHECK(false, "neuron: nrt_init returned ", nrtStatusName(status), " (", status, ") on ", where,
                ": libnrt could not reserve this process's NeuronCores. Another process may hold them: give each "
                "process its own cores with NEURON_RT_VISIBLE_CORES (e.g. 0-1 and 2-3) or NEURON_RT_NUM_CORES, "
                "or stop the process holding them (libnrt's log names the cores it wanted).");
  }
  uint32_t count = 0;
  checkNrt(lib_->nrt_get_visible_vnc_count(&count), "nrt_get_visible_vnc_count", where);
  TORCH_CHECK(count > 0, "neuron: libnrt sees no NeuronCores (NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES may "
              "select none); use TORCHNEURON_RUNTIME=sim to run on the simulator");
  TORCH_CHECK(count < static_cast<uint32_t>(kMaxDevices), "neuron: libnrt reports ", count, " NeuronCores; PyTorch device indices stop at 127. "
              "Limit this process with NEURON_RT_VISIBLE_CORES");
  devices_ = static_cast<int>(count);
  in_use_.assign(devices_, 0);
  for (int d = 0; d < devices_; ++d) {
    nrt_vnc_memory_stats_t stats{};
    size_t written = 0;
    checkNrt(lib_->nrt_get_vnc_memory_stats(static_cast<uint32_t>(d), &stats, sizeof stats, &written),
             "nrt_get_vnc_memory_stats", at(d));
    capacity_.push_back(static_cast<int64_t>(stats.bytes_limit));
  }
  queues_ = makeQueues(devices_, kStreamsPerDevice);
}

NrtRuntime::~NrtRuntime() = default;  // never run: the process's runtime is leaked (see RuntimeSelection.cpp)

void NrtRuntime::checkDevice(int device) const {
  TORCH_CHECK(device >= 0 && device < devices_, "neuron: invalid device index ", device, "; libnrt gives this "
              "process ", devices_, " NeuronCore(s) (NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES select them)");
}

void NrtRuntime::checkOpen(const char* what) const {
  TORCH_CHECK(!closed_, "neuron: ", what, " after the nrt runtime was closed (at interpreter exit)");
}

int64_t NrtRuntime::capacity(int device) const {
  checkDevice(device);
  return capacity_[device];
}

int64_t NrtRuntime::bytesInUse(int device) const {
  checkDevice(device);
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_[device];
}

void* NrtRuntime::allocate(int device, size_t bytes) {
  checkDevice(device);
  std::lock_guard<std::mutex> lock(mutex_);
  checkOpen("allocating device memory");
  nrt_tensor_t* tensor = nullptr;
  int status = lib_->nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, device, bytes, "torchneuron", &tensor);
  if (status == NRT_RESOURCE) return nullptr;  // the caching allocator releases its cache and retries
  checkNrt(status, "nrt_tensor_allocate", c10::str(at(device), ", allocating ", bytes, " bytes"));
  void* va = lib_->nrt_tensor_get_va(tensor);
  if (va == nullptr) {
    lib_->nrt_tensor_free(&tensor);
    TORCH_CHECK(false, "neuron: nrt_tensor_get_va gave no address for a ", bytes, "-byte tensor on ", at(device));
  }
  segments_.emplace(reinterpret_cast<uintptr_t>(va), Segment{tensor, bytes, device});
  in_use_[device] += static_cast<int64_t>(bytes);
  return va;
}

void NrtRuntime::free(int device, void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = segments_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == segments_.end()) {
    TORCH_WARN("neuron: ignoring free of ", ptr, " on ", at(device), ", which this runtime did not allocate");
    return;
  }
  nrt_tensor_t* tensor = it->second.tensor;
  in_use_[it->second.device] -= static_cast<int64_t>(it->second.size);
  segments_.erase(it);
  if (!closed_) lib_->nrt_tensor_free(&tensor);
}

int NrtRuntime::deviceOf(const void* ptr) const {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = segments_.upper_bound(addr);
  if (it == segments_.begin()) return -1;
  --it;
  return addr < it->first + std::max<size_t>(it->second.size, 1) ? it->second.device : -1;
}

NrtRuntime::Located NrtRuntime::locate(const void* ptr, size_t n, const char* what) const {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  checkOpen(what);
  auto it = segments_.upper_bound(addr);
  TORCH_CHECK(it != segments_.begin(), "neuron: ", what, ": ", ptr, " is not neuron device memory");
  --it;
  const Segment& s = it->second;
  const size_t offset = addr - it->first;
  TORCH_CHECK(offset + n <= s.size, "neuron: ", what, ": ", n, " bytes at ", ptr, " run past the end of its ",
              s.size, "-byte device allocation on ", at(s.device));
  return Located{s.tensor, offset, s.device};
}

std::shared_ptr<Queue> NrtRuntime::queue(int device, int stream_index) {
  checkDevice(device);
  TORCH_CHECK(stream_index >= 0 && stream_index < kStreamsPerDevice, "neuron: invalid stream index ", stream_index);
  return queues_[device][stream_index];
}

void NrtRuntime::copyHostToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                                  std::function<void()> on_done) {
  if (n == 0) {
    if (on_done) on_done();
    return;
  }
  const Located to = locate(dst, n, "copy to the device");
  q.submit(
      [this, to, src, n, on_done = std::move(on_done)] {
        checkNrt(lib_->nrt_tensor_write(to.tensor, src, to.offset, n), "nrt_tensor_write",
                 c10::str(at(to.device), ", copying ", n, " bytes from the host"));
        if (on_done) on_done();
      },
      async);
}

void NrtRuntime::copyDeviceToHost(void* dst, const void* src, size_t n, Queue& q, bool async,
                                  std::function<void()> on_done) {
  if (n == 0) {
    if (on_done) on_done();
    return;
  }
  const Located from = locate(src, n, "copy from the device");
  q.submit(
      [this, from, dst, n, on_done = std::move(on_done)] {
        checkNrt(lib_->nrt_tensor_read(from.tensor, dst, from.offset, n), "nrt_tensor_read",
                 c10::str(at(from.device), ", copying ", n, " bytes to the host"));
        if (on_done) on_done();
      },
      async);
}

void NrtRuntime::copyDeviceToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                                    std::function<void()> on_done) {
  if (n == 0) {
    if (on_done) on_done();
    return;
  }
  const Located from = locate(src, n, "device-to-device copy (source)");
  const Located to = locate(dst, n, "device-to-device copy (destination)");
  q.submit(
      [this, from, to, n, on_done = std::move(on_done)] {
        const std::string where = c10::str(at(from.device), " -> ", at(to.device), ", copying ", n, " bytes");
        if (from.device == to.device) {
          checkNrt(lib_->nrt_tensor_copy(from.tensor, from.offset, to.tensor, to.offset, n), "nrt_tensor_copy",
                   where);
        } else {
          // nrt_tensor_copy works within one NeuronCore only: a peer copy goes through host memory.
          std::vector<char> staging(n);
          checkNrt(lib_->nrt_tensor_read(from.tensor, staging.data(), from.offset, n), "nrt_tensor_read", where);
          checkNrt(lib_->nrt_tensor_write(to.tensor, staging.data(), to.offset, n), "nrt_tensor_write", where);
        }
        if (on_done) on_done();
      },
      async);
}

void NrtRuntime::memset(void* dst, int value, size_t n, Queue& q) {
  if (n == 0) return;
  const Located to = locate(dst, n, "memset");
  q.submit(
      [this, to, value, n] {
        checkNrt(lib_->nrt_tensor_memset(to.tensor, to.offset, value, n), "nrt_tensor_memset",
                 c10::str(at(to.device), ", setting ", n, " bytes"));
      },
      /*async=*/false);
}

void NrtRuntime::synchronize(int device) {
  checkDevice(device);
  for (auto& q : queues_[device]) q->drain();
}

void NrtRuntime::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  lib_->nrt_close();
}

} // namespace torchneuron
