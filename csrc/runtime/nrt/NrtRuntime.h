#pragma once
// The Trn-host runtime: libnrt behind the Runtime seam. Device memory is libnrt's: each caching-allocator
// segment is one nrt_tensor_allocate, addressed by the virtual address libnrt reports for it (the DataPtr).
// That address is never dereferenced on the host: every read, write and copy goes through nrt_tensor_read /
// nrt_tensor_write / nrt_tensor_copy at (segment, offset), on the same ordered queues as the simulator.
// Programs are NEFFs: loaded once per device (nrt_load) and executed on slices of the tensors' segments.
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/Runtime.h"
#include "runtime/nrt/NrtLoader.h"

namespace torchneuron {

// The bytes of one tensor in device memory.
struct NrtSpan {
  const void* data;
  size_t nbytes;
};

struct NrtTensorSlot {
  std::string name;  // the NEFF's name for it ("input0", "output0", ...)
  size_t nbytes;
};

struct NrtModelIo {
  int device;
  std::vector<NrtTensorSlot> inputs;
  std::vector<NrtTensorSlot> outputs;
};

class NrtRuntime final : public Runtime {
 public:
  NrtRuntime(std::shared_ptr<const NrtLibrary> lib, const RuntimeConfig& config);
  ~NrtRuntime() override;

  std::string name() const override { return "nrt"; }
  int deviceCount() const noexcept override { return devices_; }
  const TargetInfo& target() const override { return target_; }
  int64_t capacity(int device) const override;
  int64_t bytesInUse(int device) const override;

  void* allocate(int device, size_t bytes) override;
  void free(int device, void* ptr) override;
  int deviceOf(const void* ptr) const override;
  bool hostAddressable() const override { return false; }

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

  // NEFF programs. A model lives on one device; execute runs it in stream order on `q` (inline, after earlier
  // work on the queue), reading `inputs` and writing `outputs` (each must match the NEFF's tensor sizes).
  int64_t loadModel(int device, const void* neff, size_t size);
  NrtModelIo modelIo(int64_t model) const;
  void execute(int64_t model, const std::vector<NrtSpan>& inputs, const std::vector<NrtSpan>& outputs, Queue& q,
               const std::string& what);
  void unloadModel(int64_t model);

  // nrt_close (at interpreter exit). Frees after it are ignored; anything else raises.
  void close();

  const NrtLibrary& library() const { return *lib_; }

 private:
  struct Segment {
    nrt_tensor_t* tensor;
    size_t size;
    int device;
  };
  struct Located {
    nrt_tensor_t* tensor;
    size_t offset;
    int device;
  };
  struct Model {
    nrt_model_t* model;
    NrtModelIo io;
  };
  void checkDevice(int device) const;
  void checkOpen(const char* what) const;
  // The segment holding [ptr, ptr + n); raises naming `what` when the bytes are not device memory.
  Located locate(const void* ptr, size_t n, const char* what) const;

  const std::shared_ptr<const NrtLibrary> lib_;
  TargetInfo target_;
  int devices_ = 0;
  std::vector<int64_t> capacity_;
  mutable std::mutex mutex_;
  std::vector<int64_t> in_use_;
  std::map<uintptr_t, Segment> segments_;  // by virtual address
  std::unordered_map<int64_t, Model> models_;
  int64_t next_model_ = 1;
  bool closed_ = false;
  std::vector<std::vector<std::shared_ptr<Queue>>> queues_;
};

// The process's runtime when it is the nrt one (initialising it if needed); raises otherwise, naming `what`.
NrtRuntime& nrtRuntime(const char* what);

} // namespace torchneuron
