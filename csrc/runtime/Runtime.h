#pragma once
// The seam between everything PyTorch-facing (allocator, guard, streams, kernels) and what executes:
// SimRuntime (host memory with the target's HBM capacity, host kernels, XLA:CPU) or NrtRuntime (libnrt, whose
// device memory the host cannot address: every byte moves through the runtime's copies).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/Queue.h"
#include "runtime/Target.h"

namespace torchneuron {

// The size of every per-device table (current streams, queue and cache lookups, generators): PyTorch's device
// index is an int8_t. A runtime offers at most kMaxDevices - 1 devices, since PyTorch keeps the count in one.
constexpr int kMaxDevices = 128;

// Streams per device on every runtime: the default stream plus a pool handed out round-robin, as torch.cuda
// does. One constant, so the stream layer's queue cache and both runtimes agree on the valid indices.
constexpr int kStreamsPerDevice = 9;

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual std::string name() const = 0;  // "sim" | "nrt"
  virtual int deviceCount() const noexcept = 0;
  virtual const TargetInfo& target() const = 0;
  virtual int64_t capacity(int device) const = 0;  // bytes of device memory the caching allocator may reserve
  virtual int64_t bytesInUse(int device) const = 0;

  // Device memory. allocate returns nullptr when the request does not fit in the device's capacity: the
  // caching allocator then frees its cache and retries before reporting an OOM.
  virtual void* allocate(int device, size_t bytes) = 0;
  virtual void free(int device, void* ptr) = 0;
  // Which device owns an address (interior pointers too); -1 when none does.
  virtual int deviceOf(const void* ptr) const = 0;
  // True when device memory can be read and written by host code in this process (the simulator).
  virtual bool hostAddressable() const = 0;

  // Ordered queues: stream `stream_index` of `device`. Index 0 is the default stream.
  virtual std::shared_ptr<Queue> queue(int device, int stream_index) = 0;
  virtual int streamsPerDevice() const = 0;

  // Copies and memset, ordered on `q`. With `async` they may still be running when the call returns.
  virtual void copyHostToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                                std::function<void()> on_done = {}) = 0;
  virtual void copyDeviceToHost(void* dst, const void* src, size_t n, Queue& q, bool async,
                                std::function<void()> on_done = {}) = 0;
  virtual void copyDeviceToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                                  std::function<void()> on_done = {}) = 0;
  virtual void memset(void* dst, int value, size_t n, Queue& q) = 0;

  // Waits for every queue of `device` to drain.
  virtual void synchronize(int device) = 0;
};

struct RuntimeConfig {
  std::string kind = "auto";  // auto | sim | nrt
  std::string target = "trn2";  // the simulated target (nrt: the instance's, from libnrt)
  int devices = 0;            // sim: 0 = the target's logical core count
  int64_t hbm_bytes = 0;      // sim: 0 = the target's HBM / devices
  bool launch_blocking = false;
  int lnc = 0;                // NEURON_LOGICAL_NC_CONFIG; 0 = the target's default
  std::vector<TargetInfo> targets;  // every known generation (torchneuron/targets.py)
  std::string framework_version;    // reported to nrt_init: torch's version
  std::string fal_version;          // reported to nrt_init: torchneuron's version
};

// Set by Python (torchneuron._registration, from torchneuron._env and torchneuron.targets) before first use;
// ignored once the runtime exists.
void configureRuntime(const RuntimeConfig& config);
const RuntimeConfig& runtimeConfig();

// The process's runtime, created on first use. Throws (never crashes) when the configuration cannot be
// honoured, and in a forked child of a process that had already initialised it.
Runtime& runtime();
bool runtimeInitialized();
// True in a forked child of a process whose runtime was initialised.
bool inBadFork();
// Device count without initialising or throwing (PyTorch calls it from noexcept contexts).
int deviceCountNoThrow() noexcept;
// False once an nrt runtime exists: device memory is then reachable only through the runtime's copies. Cheap
// (one atomic load): the per-op path asks it.
bool deviceMemoryIsHostMemory();

} // namespace torchneuron
