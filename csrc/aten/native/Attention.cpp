// Fused attention on the simulator: where the CPU would take its flash-attention kernel, neuron runs that same
// kernel on the device buffers (through the host path), forward and backward. Without this, SDPA on a
// PrivateUse1 device falls to ATen's math path: ~10 small ops per call, its own rounding (GPT-style training
// drifted ~6e-5 from the CPU), and a materialised L x S attention matrix.
#include "aten/native/Attention.h"

#include <ATen/ATen.h>
#include <ATen/SDPBackend.h>
#include <c10/core/impl/LocalDispatchKeySet.h>


namespace torchneuron {

namespace {
// The choice depends on sizes, strides and dtypes only, so it is made on data-less CPU stand-ins (the CPU
// kernel reads no element): no device memory is touched, and the same code answers for FakeTensors (Dynamo,
// torch.export), whose data does not exist.
char g_no_data = 0;
at::Tensor shapeOnly(const at::Tensor& t) {
  return at::from_blob(&g_no_data, t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()));
}
std::optional<at::Tensor> shapeOnly(const std::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined()) return std::nullopt;
  return shapeOnly(*t);
}
} // namespace

int64_t fusedSdpChoice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                       std::optional<double> scale, bool enable_gqa) {
  constexpr auto kMath = static_cast<int64_t>(at::SDPBackend::math);
  // Dropout would draw from the CPU's generator inside the CPU kernel; the math path draws from neuron's.
  if (dropout_p > 0.0) return kMath;
  // The CPU flash backward computes no gradient for the mask.
  if (attn_mask.has_value() && attn_mask->defined() && attn_mask->requires_grad()) return kMath;
  if (query.device() != key.device() || query.device() != value.device()) {
    return kMath;  // mixed devices: let the math path raise the usual device error
  }
  // Otherwise follow the CPU's own decision for these shapes, dtypes and flags. Under FakeTensorMode the
  // Python dispatch keys are still active here; the stand-ins must reach the CPU kernel, not the mode.
  c10::impl::ExcludeDispatchKeyGuard no_python(c10::DispatchKeySet(
      {c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot, c10::DispatchKey::PreDispatch}));
  const int64_t cpu = at::_fused_sdp_choice(shapeOnly(query), shapeOnly(key), shapeOnly(value), shapeOnly(attn_mask),
                                            dropout_p, is_causal, scale, enable_gqa);
  return cpu == static_cast<int64_t>(at::SDPBackend::flash_attention)
             ? static_cast<int64_t>(at::SDPBackend::overrideable)
             : kMath;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor, at::Tensor>
fusedAttention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
               const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal, bool return_debug_mask,
               std::optional<double> scale) {
  // The CPU flash kernel on neuron tensors goes through the host path (device buffers, device results).
  auto [out, logsumexp] =
      at::_scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, attn_bias, scale);
  // Undefined where PyTorch's meta function returns None (no nested sequences, no debug mask): compiled and
  // eager graphs then see the same outputs.
  const auto unused = query.options().dtype(at::kLong);
  return {out, logsumexp, at::Tensor(), at::Tensor(), c10::SymInt(query.size(-2)), c10::SymInt(key.size(-2)),
          at::empty({}, unused), at::empty({}, unused), at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fusedAttentionBackward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor&, const at::Tensor&, int64_t, int64_t,
    double dropout_p, bool is_causal, const at::Tensor&, const at::Tensor&, std::optional<double> scale) {
  TORCH_CHECK(!grad_input_mask[3], "neuron: fused attention computes no gradient for attn_mask; ",
              "scaled_dot_product_attention takes the math path when the mask requires grad");
  std::optional<at::Tensor> mask = attn_bias.defined() ? std::optional<at::Tensor>(attn_bias) : std::nullopt;
  auto [gq, gk, gv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
      grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, mask, scale);
  return {gq, gk, gv, at::Tensor()};
}

} // namespace torchneuron
