// Registration only: scaled_dot_product_attention's fused path for neuron (csrc/aten/native/Attention.cpp).
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include "aten/native/Attention.h"

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torchneuron::fusedSdpChoice)
} // namespace at::native

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_fused_attention_overrideable", &torchneuron::fusedAttention);
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", &torchneuron::fusedAttentionBackward);
}
