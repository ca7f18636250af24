#include "aten/native/Convolution.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <optional>

#include "aten/native/HostAlias.h"
#include "aten/native/HostOutputAllocator.h"
#include "aten/native/HostStaging.h"
#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron::native {

namespace {
c10::DeviceIndex commonDevice(const char* op, std::initializer_list<const at::Tensor*> tensors) {
  c10::DeviceIndex device = -1;
  for (const at::Tensor* t : tensors) {
    if (!t->defined()) continue;
    TORCH_CHECK(t->device().is_privateuseone(), "Expected all tensors to be on the same device, but found at "
                "least two devices, neuron and ", t->device(), "! (", op, ": move the ", t->sizes(),
                " tensor with .to('neuron'))");
    if (device < 0) device = t->device().index();
    TORCH_CHECK(t->device().index() == device, "Expected all tensors to be on the same device, but found at least "
                "two devices, neuron:", static_cast<int>(device), " and ", t->device(), "! (", op, ")");
  }
  auto queue = currentQueue(device);
  if (!queue->idle()) queue->drain();  // stream order
  return device;
}

// The CPU kernel's view of the device tensors and of its results: zero-copy on the simulator (outputs allocated
// in device memory), host copies on nrt (read in, results uploaded).
class HostSide {
 public:
  explicit HostSide(c10::DeviceIndex device) : device_(device), staged_(!deviceMemoryIsHostMemory()) {
    if (!staged_) capture_.emplace(device, static_cast<int>(currentStream(device).id()));
  }
  at::Tensor in(const at::Tensor& t) const {
    if (!t.defined()) return t;
    return staged_ ? hostTensorOver(readStorage(t.storage(), *currentQueue(device_)), t) : hostAlias(t);
  }
  at::Tensor out(const at::Tensor& t) const {
    return staged_ ? uploadHostResult(t, device_, *currentQueue(device_)) : fromHostResult(t, device_);
  }

 private:
  c10::DeviceIndex device_;
  bool staged_;
  std::optional<CaptureOutputsOnDevice> capture_;
};
} // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  at::Tensor b = bias.value_or(at::Tensor());
  c10::DeviceIndex device = commonDevice("aten::convolution", {&input, &weight, &b});
  HostSide host(device);
  std::optional<at::Tensor> host_bias = b.defined() ? std::optional<at::Tensor>(host.in(b)) : std::nullopt;
  at::Tensor out = at::convolution(host.in(input), host.in(weight), host_bias, stride, padding, dilation,
                                   transposed, output_padding, groups);
  return host.out(out);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  c10::DeviceIndex device = commonDevice("aten::convolution_backward", {&grad_output, &input, &weight});
  HostSide host(device);
  std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto [gi, gw, gb] = at::convolution_backward(host.in(grad_output), host.in(input), host.in(weight), bias_sizes,
                                               stride, padding, dilation, transposed, output_padding, groups,
                                               output_mask);
  return {host.out(gi), host.out(gw), host.out(gb)};
}

} // namespace torchneuron::native
