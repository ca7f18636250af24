// Registration only: the ops a training step or an eager loop runs most get the unboxed host path
// (aten/native/HostKernel.h); every other op keeps the boxed kernel (native/BoxedHostKernel.h). An op is listed here for speed alone:
// both paths run the same CPU kernel on the same host aliases.
#include <ATen/Operators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>
#include <unordered_set>

#include "aten/RegisterHostKernels.h"
#include "aten/native/HostKernel.h"

namespace torchneuron {

namespace {
template <class Op>
void registerOne(torch::Library& lib, std::unordered_set<std::string>& names) {
  auto op = c10::Dispatcher::singleton().findOp(c10::OperatorName(Op::name, Op::overload_name));
  if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) return;  // no CPU kernel: nothing to call
  std::string qualified = std::string(Op::name).substr(6);
  if (!std::string(Op::overload_name).empty()) qualified += "." + std::string(Op::overload_name);
  lib.impl(qualified.c_str(), TORCH_FN(hostkernel::HostKernel<Op>::call));
  names.insert(std::string(Op::name) + "." + Op::overload_name);
}

template <class... Ops>
void registerAll(torch::Library& lib, std::unordered_set<std::string>& names) {
  (registerOne<Ops>(lib, names), ...);
}
} // namespace

std::unordered_set<std::string> registerHostKernels(torch::Library& lib) {
  namespace o = at::_ops;
  std::unordered_set<std::string> names;
  // elementwise arithmetic, functional / in-place / out=
  registerAll<o::add_Tensor, o::add__Tensor, o::add_out, o::sub_Tensor, o::sub__Tensor, o::sub_out,
              o::mul_Tensor, o::mul__Tensor, o::mul_out, o::div_Tensor, o::div__Tensor, o::div_out,
              o::div_Tensor_mode, o::addcdiv, o::addcdiv_, o::addcmul, o::addcmul_, o::lerp__Scalar,
              o::lerp__Tensor, o::pow_Tensor_Scalar, o::pow_Tensor_Tensor, o::maximum, o::minimum,
              o::where_self, o::clamp, o::clamp_, o::masked_fill__Scalar, o::fill__Scalar>(lib, names);
  // unary math and activations with their backward kernels
  registerAll<o::neg, o::abs, o::sqrt, o::sqrt_, o::rsqrt, o::exp, o::log, o::tanh, o::sigmoid, o::reciprocal,
              o::relu, o::relu_, o::gelu, o::gelu_backward, o::silu, o::silu_backward, o::threshold_backward,
              o::sigmoid_backward, o::tanh_backward>(lib, names);
  // comparisons
  registerAll<o::eq_Tensor, o::eq_Scalar, o::ne_Tensor, o::ne_Scalar, o::lt_Tensor, o::lt_Scalar, o::gt_Tensor,
              o::gt_Scalar>(lib, names);
  // reductions, softmax and losses
  registerAll<o::sum_dim_IntList, o::mean_dim, o::amax, o::linalg_vector_norm, o::_softmax,
              o::_softmax_backward_data, o::_log_softmax, o::_log_softmax_backward_data, o::nll_loss_forward,
              o::nll_loss_backward>(lib, names);
  // matrix products
  registerAll<o::mm, o::addmm, o::addmm_, o::bmm, o::baddbmm, o::mv, o::dot>(lib, names);
  // normalisation, pooling, gathering
  registerAll<o::native_layer_norm, o::native_layer_norm_backward, o::native_batch_norm,
              o::native_batch_norm_backward, o::cat, o::index_select, o::index_Tensor, o::embedding_dense_backward,
              o::max_pool2d_with_indices, o::max_pool2d_with_indices_backward>(lib, names);
  // optimizer steps
  registerAll<o::_foreach_add__List, o::_foreach_add__Scalar, o::_foreach_mul__Scalar, o::_foreach_mul__List,
              o::_foreach_mul__Tensor, o::_foreach_addcmul__Scalar, o::_foreach_addcdiv__Scalar,
              o::_foreach_lerp__Scalar, o::_foreach_sqrt, o::_foreach_div__List, o::_foreach_div__ScalarList,
              o::_foreach_add__ScalarList, o::_foreach_norm_Scalar, o::_fused_adamw_, o::_fused_adam_,
              o::_fused_sgd_>(lib, names);
  return names;
}

} // namespace torchneuron
