#pragma once
// Page-locked host memory for fast, asynchronous host<->device copies (tensor.pin_memory("neuron"),
// DataLoader(pin_memory=True)). On the simulator "pinned" means allocated and registered here, which is what
// makes non_blocking copies from it truly asynchronous, exactly the CUDA contract.
#include <ATen/core/CachingHostAllocator.h>

namespace torchneuron {

class PinnedAllocator final : public at::HostAllocator {
 public:
  at::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  // The async copy that uses a pinned buffer holds a reference to it until it has run, so the buffer is
  // never reused early; no extra event bookkeeping is needed.
  bool record_event(void* ptr, void* ctx, c10::Stream stream) override { return true; }
  void empty_cache() override {}
  at::HostStats get_stats() override;
  void reset_accumulated_stats() override;
  void reset_peak_stats() override;

  bool isPinned(const void* ptr) const;
};

PinnedAllocator& pinnedAllocator();

} // namespace torchneuron
