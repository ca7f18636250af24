// native_dropout draws its mask inside the CPU kernel from the CPU's default generator (the op has no
// Generator argument), so on the host path neuron's dropout would consume the CPU's random stream. Here the
// mask comes from bernoulli_ on the neuron tensor, which draws from the neuron device's generator; the
// arithmetic is the CPU kernel's, so equal seeds give bit-identical results on both devices.
#include "aten/native/Dropout.h"

#include <ATen/ATen.h>

namespace torchneuron {

std::tuple<at::Tensor, at::Tensor> nativeDropout(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input)};
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  const double keep = 1.0 - p;
  const double scale = keep == 0.0 ? 0.0 : 1.0 / keep;  // p == 1: all dropped, no division by zero
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool), at::MemoryFormat::Contiguous);
  mask.bernoulli_(keep);
  return {input.mul(mask).mul_(scale), mask};
}

} // namespace torchneuron
