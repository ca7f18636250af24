// torch.autocast("neuron") op policy: the same op lists and cast policies as CUDA (ATen's autocast_mode.h
// lists, shared by every backend), registered for DispatchKey::AutocastPrivateUse1. PyTorch 2.13 registers
// neither kernels nor a fallthrough for that key (it does for CPU, CUDA, XPU, MPS, MTIA, MAIA), so without
// this file every op inside torch.autocast("neuron") would fail with "Could not run ... 'Autocastneuron'".
//
//   lower_precision_fp  matmul/conv/linear/SDPA ... run in the autocast dtype (bf16 or fp16)
//   fp32                exp/log/pow/norms/losses/softmax-like reductions ... run in float32
//   fp32_set_opt_dtype  sum/prod/cumsum/softmax/log_softmax/norms: float32 unless a dtype is given
//   promote             addcmul/addcdiv/cat-like ops: widest input dtype
// binary_cross_entropy is banned under autocast exactly as on CUDA (use the *_with_logits form).
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

namespace torchneuron {
namespace {

at::Tensor binaryCrossEntropyBanned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                    int64_t) {
  TORCH_CHECK(false, "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast "
              "(on neuron, as on CUDA).\nMany models use a sigmoid layer right before the binary cross entropy "
              "layer. In this case, combine the two layers using torch.nn.functional."
              "binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss. binary_cross_entropy_with_logits "
              "and BCEWithLogits are safe to autocast.");
}

// The op-list macros spell signatures unqualified (Tensor, ScalarType, ...), as inside at::autocast.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// Ops outside the lists run unchanged.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define NEURON_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(NEURON_AUTOCAST_LOWER_PRECISION_FP)
#undef NEURON_AUTOCAST_LOWER_PRECISION_FP

#define NEURON_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(NEURON_AUTOCAST_FP32)
#undef NEURON_AUTOCAST_FP32

#define NEURON_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(NEURON_AUTOCAST_FP32_SET_OPT_DTYPE)
#undef NEURON_AUTOCAST_FP32_SET_OPT_DTYPE

  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)

#define NEURON_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(NEURON_AUTOCAST_PROMOTE)
#undef NEURON_AUTOCAST_PROMOTE

  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(torchneuron::binaryCrossEntropyBanned));
}

} // namespace
} // namespace torchneuron
