#pragma once
// The last step of a boxed host call, shared by the dense and the nested host paths: the host kernel's results
// replace the op's arguments on the caller's stack, each tensor brought back to the device by `to_device`.
#include <ATen/core/List.h>
#include <ATen/core/stack.h>

#include <utility>

namespace torchneuron {

template <class ToDevice>
void returnResults(torch::jit::Stack& host, torch::jit::Stack* stack, size_t nargs, ToDevice&& to_device) {
  for (c10::IValue& v : host) {
    if (v.isTensor()) {
      v = to_device(std::move(v).toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : v.toTensorList()) out.push_back(to_device(t));
      v = std::move(out);
    }
  }
  torch::jit::drop(*stack, nargs);
  for (c10::IValue& v : host) stack->push_back(std::move(v));
}

} // namespace torchneuron
