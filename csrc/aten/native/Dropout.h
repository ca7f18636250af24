#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace torchneuron {

std::tuple<at::Tensor, at::Tensor> nativeDropout(const at::Tensor& input, double p, std::optional<bool> train);

} // namespace torchneuron
