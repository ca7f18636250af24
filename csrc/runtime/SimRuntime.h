#pragma once
// The simulator runtime: device memory is host memory owned by this object (capacity = the target's HBM
// per logical core), queues are real ordered queues, copies are memcpy on those queues.
#include <map>
#include <mutex>
#include <vector>

#include "runtime/Runtime.h"

namespace torchneuron {

class SimRuntime final : public Runtime {
 public:
  SimRuntime(const TargetInfo& target, int devices, int64_t hbm_bytes_per_device);
  ~SimRuntime() override;

  std::string name() const override { return "sim"; }
  int deviceCount() const noexcept override { return devices_; }
  const TargetInfo& target() const override { return target_; }
  int64_t capacity(int device) const override;
  int64_t bytesInUse(int device) const override;

  void* allocate(int device, size_t bytes) override;
  void free(int device, void* ptr) override;
  int deviceOf(const void* ptr) const override;
  bool hostAddressable() const override { return true; }

  std::shared_ptr<Queue> queue(int device, int stream_index) override;
  int streamsPerDevice() const override { return kStreamsPerDevice; }

  void copyHostToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                        std::function<void()> on_done) override;
  void copyDeviceToHost(void* dst, const void* src, size_t n, Queue& q, bool async,
                        std::function<void()> on_done) override;
  void copyDeviceToDevice(void* dst, const void* src, size_t n, Queue& q, bool async,
                          std::function<void()> on_done) override;
  void memset(void* dst, int value, size_t n, Queue& q) override;
  void synchronize(int device) override;

 private:
  void checkDevice(int device) const;
  void copy(void* dst, const void* src, size_t n, Queue& q, bool async, std::function<void()> on_done);

  const TargetInfo target_;
  const int devices_;
  const int64_t hbm_bytes_;
  mutable std::mutex mutex_;
  std::vector<int64_t> in_use_;
  std::map<uintptr_t, std::pair<size_t, int>> segments_;  // base -> (bytes, device)
  std::vector<std::vector<std::shared_ptr<Queue>>> queues_;
};

} // namespace torchneuron
