#pragma once
// `module.to("neuron")` keeps Parameter identity, as `module.to("cuda")` does.
//
// nn.Module._apply moves a parameter in place (`param.data = moved`) only when
// torch._has_compatible_shallow_copy_type(param, moved) holds; c10 answers it for the dense backends it knows
// (CPU, CUDA, XPU, ...) and leaves PrivateUse1 backends to register their own kernel for the op. Without one,
// every move builds new Parameter objects: tied weights (a GPT's embedding and output head) come apart and
// optimizers hold stale tensors. A dense neuron tensor and a dense CPU tensor share one TensorImpl class, so
// one may take the other's place, exactly as CPU and CUDA tensors do.
#include <ATen/core/Tensor.h>

namespace torchneuron::native {

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);

} // namespace torchneuron::native
