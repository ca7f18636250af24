#pragma once
// One host-kernel call, shared by the boxed kernel (any op) and the unboxed fast path (the hottest ops). On
// the simulator neuron arguments become zero-copy host aliases, the CPU kernel runs with its outputs allocated
// in device memory, and results come back as neuron tensors. On nrt, whose device memory the host cannot
// address, the same call runs on host copies instead (HostStaging.h): the CPU fallback of an op with no NEFF.
//
// The caller's tensors are referred to by pointer, never copied: in PyTorch 2.13 the first C++ copy of a
// tensor that has a Python object increfs that object, taking the GIL the Python binding just released.
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/native/HostAlias.h"
#include "aten/native/HostOutputAllocator.h"
#include "aten/native/HostThreads.h"
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
  c10::SmallVector<int64_t, 6> host_sizes_;  // inline: a std::vector cost an out-of-line destructor per op
};

class HostCall {
 public:
  HostCall(OpEntry& entry, c10::DeviceIndex device);
  ~HostCall();
  HostCall(const HostCall&) = delete;
  HostCall& operator=(const HostCall&) = delete;

  // The host alias (nrt: host copy) of a neuron tensor (one per distinct tensor, so x.add_(x) keeps its
  // aliasing; on nrt one host copy per storage, so views of one storage stay views of one buffer).
  at::Tensor toHost(const at::Tensor& t, bool written) { return aliasAt(toHostIndex(t, written)); }
  // toHost without copying the alias: its index, for aliasAt() once every argument has one (the unboxed path,
  // which passes the kernel references; an index stays valid when later arguments grow the pair list).
  size_t toHostIndex(const at::Tensor& t, bool written);
  at::Tensor& aliasAt(size_t index) {
    Pair& p = pairs_[index];
    return p.lent != nullptr ? p.lent->tensor : p.owned;
  }
  // One element of an index list (Tensor?[]) as the host kernel takes it: indices may stay on the host, as on
  // CUDA; neuron ones become host aliases; undefined tensors (Python indexing passes them, not None, for the
  // sliced dims of x[:, i]) become None.
  void appendIndex(c10::List<std::optional<at::Tensor>>& out, const c10::IValue& e, bool written) {
    const bool defined = e.isTensor() && e.toTensor().defined();
    if (defined && e.toTensor().device().is_privateuseone()) {
      out.push_back(toHost(e.toTensor(), written));
    } else {
      out.push_back(defined ? std::optional<at::Tensor>(e.toTensor()) : std::nullopt);
    }
  }
  // A result of the host kernel as a neuron tensor: the caller's own tensor (in-place / out=), a view of an
  // input's storage, or a fresh result whose device-memory storage is handed over (nrt: uploaded).
  at::Tensor toDevice(at::Tensor&& out) const;
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
  HostThreadState& thread() { return thread_; }

 private:
  struct Pair {
    c10::TensorImpl* alias_impl;
    c10::StorageImpl* alias_storage;
    const void* alias_data;  // the bytes the alias pointed at before the kernel ran
    const at::Tensor* original;
    bool written;
    CachedAlias* lent;  // the alias cache's tensor, lent for the call; else `owned` is the alias
    at::Tensor owned;
  };
  // nrt: one host copy per neuron storage the call touches.
  struct Staged {
    c10::StorageImpl* device_storage;
    const at::Tensor* original;  // a caller tensor over it (keeps it alive for the call)
    c10::Storage host;
    bool written;
  };
  // Stream order and device-memory capture for the kernel's lifetime (RAII, so errors unwind it).
  class Scope {
   public:
    explicit Scope(HostCall& call);
    void done();  // the kernel returned: sync written arguments

   private:
    HostCall& call_;
    const int stream_;
    std::optional<CaptureOutputsOnDevice> capture_;  // the simulator only
    profiler::OpActivity activity_;  // the op's device event while a profiler records (else inert)
  };
  int enterStream();  // drains earlier async work; returns the stream index
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
  void syncGeometry(const Pair& p) const;
  at::Tensor stage(const at::Tensor& t, bool written);
  void writeBackStaged();

  OpEntry& entry_;
  HostThreadState& thread_;  // looked up once per call
  c10::DeviceIndex device_;
  const bool staged_;  // nrt: host copies instead of aliases
  c10::SmallVector<Pair, 8> pairs_;
  c10::SmallVector<Staged, 4> storages_;
};

} // namespace torchneuron
