#include "aten/native/Convolution.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "aten/native/HostAlias.h"
#include "aten/native/HostOutputAllocator.h"
#include "device/Streams.h"

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

at::Tensor hostOrUndefined(const at::Tensor& t) { return t.defined() ? hostAlias(t) : t; }
} // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  at::Tensor b = bias.value_or(at::Tensor());
  c10::DeviceIndex device = commonDevice("aten::convolution", {&input, &weight, &b});
  CaptureOutputsOnDevice capture(device, static_cast<int>(currentStream(device).id()));
  std::optional<at::Tensor> host_bias = b.defined() ? std::optional<at::Tensor>(hostAlias(b)) : std::nullopt;
  at::Tensor out = at::convolution(hostAlias(input), hostAlias(weight), host_bias, stride, padding, dilation,
                                   transposed, output_padding, groups);
  return fromHostResult(out, device);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  c10::DeviceIndex device = commonDevice("aten::convolution_backward", {&grad_output, &input, &weight});
  CaptureOutputsOnDevice capture(device, static_cast<int>(currentStream(device).id()));
  std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto [gi, gw, gb] = at::convolution_backward(hostOrUndefined(grad_output), hostOrUndefined(input), hostOrUndefined(weight), bias_sizes, stride,
                                               padding, dilation, transposed, output_padding, groups, output_mask);
  return {fromHostResult(gi, device), fromHostResult(gw, device), fromHostResult(gb, device)};
}

} // namespace torchneuron::native
