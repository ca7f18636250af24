// Fused attention on the simulator: where the CPU would take its flash-attention kernel, neuron runs that same
// kernel on the device buffers (through the host path), forward and backward. Without this, SDPA on a
// PrivateUse1 device falls to ATen's math path: ~10 small ops per call, its own rounding (GPT-style training
// drifted ~6e-5 from the CPU), and a materialised L x S attention matrix.
#include "aten/native/Attention.h"

#include <ATen/ATen.h>
#include <ATen/SDPBackend.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <string>


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
// Why the device's fused attention (the CPU flash kernel on device buffers) cannot take these inputs; empty
// when it can. The CPU flash kernel's own constraints (dense 4-D inputs of one float dtype, one head size,
// equal batch and head counts, a contiguous last dimension, non-empty sequences) and this device's (no dropout:
// it would draw from the CPU's generator; no gradient for the mask; one device).
std::string fusedRefusal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p) {
  if (dropout_p > 0.0) return "dropout_p > 0 (the fused kernel would not draw from neuron's generator)";
  if (attn_mask.has_value() && attn_mask->defined() && attn_mask->requires_grad()) {
    return "the attention mask requires grad (the fused backward computes none for it)";
  }
  if (q.device() != k.device() || q.device() != v.device()) return "query, key and value are on different devices";
  if (q.is_nested() || k.is_nested() || v.is_nested()) return "nested tensors are not supported";
  const auto dt = q.scalar_type();
  if (k.scalar_type() != dt || v.scalar_type() != dt ||
      !(dt == at::kFloat || dt == at::kDouble || dt == at::kBFloat16 || dt == at::kHalf)) {
    return "query, key and value must share one of float32, float64, bfloat16, float16";
  }
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "query, key and value must be 4-D (batch, heads, seq, dim)";
  if (q.size(0) != k.size(0) || q.size(0) != v.size(0) || q.size(1) != k.size(1) || q.size(1) != v.size(1)) {
    return "batch and head counts of query, key and value must be equal (no grouped-query broadcasting)";
  }
  if (q.size(-1) != k.size(-1) || q.size(-1) != v.size(-1)) return "query, key and value must have one head size";
  if (q.size(-2) == 0 || k.size(-2) == 0) return "sequence lengths must be non-zero";
  if (q.stride(-1) != 1 || k.stride(-1) != 1 || v.stride(-1) != 1) {
    return "the last dimension of query, key and value must be contiguous";
  }
  return "";
}
} // namespace

int64_t fusedSdpChoice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                       std::optional<double> scale, bool enable_gqa) {
  constexpr auto kMath = static_cast<int64_t>(at::SDPBackend::math);
  constexpr auto kOverrideable = static_cast<int64_t>(at::SDPBackend::overrideable);
  auto& ctx = at::globalContext();
  if (ctx.userEnabledOverrideableSDP() && !ctx.userEnabledFlashSDP()) {
    // sdpa_kernel(SDPBackend.OVERRIDEABLE): the device's attention asked for by name. The CPU's choice below
    // would see its flash kernel switched off and find no backend; decide here, on the same constraints.
    const std::string why = fusedRefusal(query, key, value, attn_mask, dropout_p);
    if (why.empty()) return kOverrideable;
    if (ctx.userEnabledMathSDP()) return kMath;
    TORCH_CHECK(false, "neuron: scaled_dot_product_attention with SDPBackend.OVERRIDEABLE (the device's fused "
                "attention) cannot take these inputs: ", why, ". Allow SDPBackend.MATH too "
                "(sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH])) or change the inputs");
  }
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
  return cpu == static_cast<int64_t>(at::SDPBackend::flash_attention) ? kOverrideable : kMath;
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
