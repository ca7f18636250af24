#pragma once
// One host-kernel call on the simulator, shared by the boxed fallback (any op) and the unboxed fast path
// (the hottest ops): neuron arguments become zero-copy host aliases, the CPU kernel runs with its outputs
// allocated in device memory, and results come back as neuron tensors.
//
// The caller's tensors are referred to by pointer, never copied: in PyTorch 2.13 the first C++ copy of a
// tensor that has a Python object increfs that object, taking the GIL the Python binding just released.
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <string>
#include <vector>

#include "aten/native/HostOutputAllocator.h"
#include "aten/native/OpRegistry.h"
#include "profiler/DeviceActivity.h"

namespace torchneuron {

// Picks the op's device and checks every tensor is on it (or is a host scalar), as CUDA kernels do.
class DeviceCheck {
 public:
  explicit DeviceCheck(const std::string& op_name) : op_name_(op_name) {}
  void see(const at::Tensor& t, const std::string& arg, bool host_allowed);
  c10::DeviceIndex finish();

 private:
  const std::string& op_name_;
  c10::DeviceIndex device_ = -1;
  const std::string* first_arg_ = nullptr;
  const std::string* host_arg_ = nullptr;
  c10::Device host_device_{c10::DeviceType::CPU};
  std::vector<int64_t> host_sizes_;
};

class HostCall {
 public:
  HostCall(OpEntry& entry, c10::DeviceIndex device) : entry_(entry), device_(device) {}

  // The host alias of a neuron tensor (one alias per distinct tensor, so x.add_(x) keeps its aliasing).
  at::Tensor toHost(const at::Tensor& t, bool written);
  // A result of the host kernel as a neuron tensor: the caller's own tensor (in-place / out=), a view of an
  // input's storage, or a fresh result whose device-memory storage is handed over.
  at::Tensor toDevice(at::Tensor out) const;
  // The caller's tensor behind an alias the kernel returned by reference (in-place / out=), or nullptr.
  const at::Tensor* originalOf(const at::Tensor& alias) const;

  // Runs the host kernel in stream order with outputs captured in device memory, then mirrors what the
  // kernel did to written arguments (resized out=) onto the caller's tensors.
  template <class Fn>
  auto run(Fn&& kernel) -> decltype(kernel()) {
    Scope scope(*this);
    if constexpr (std::is_void_v<decltype(kernel())>) {
      guarded(kernel);
      scope.done();
    } else {
      decltype(kernel()) result = guarded(kernel);
      scope.done();
      return result;
    }
  }

  c10::DeviceIndex device() const { return device_; }

 private:
  struct Pair {
    c10::TensorImpl* alias_impl;
    c10::StorageImpl* alias_storage;
    const void* alias_data;  // the bytes the alias pointed at before the kernel ran
    const at::Tensor* original;
    bool written;
    at::Tensor alias;
  };
  // Stream order and device-memory capture for the kernel's lifetime (RAII, so errors unwind it).
  class Scope {
   public:
    explicit Scope(HostCall& call);
    void done();  // the kernel returned: sync written arguments

   private:
    HostCall& call_;
    const int stream_;
    CaptureOutputsOnDevice capture_;
    profiler::OpActivity activity_;  // the op's device event while a profiler records (else inert)
  };
  static int enterStream(c10::DeviceIndex device);  // drains earlier async work; returns the stream index
  template <class Fn>
  auto guarded(Fn& kernel) -> decltype(kernel()) {
    try {
      return kernel();
    } catch (c10::Error& e) {
      addContext(e);
      throw;
    }
  }
  void addContext(c10::Error& e) const;
  void syncWritten(const Pair& p) const;

  OpEntry& entry_;
  c10::DeviceIndex device_;
  c10::SmallVector<Pair, 8> pairs_;
};

} // namespace torchneuron
