// Fused RNN cells as composites of ATen ops (see RnnCells.h). The forward arithmetic follows the CPU's unfused
// cell step by step (bias added to each matmul result first, then hidden + input, the same activation and
// product order), so a neuron RNN rounds like the CPU one; the backward formulas are those of CUDA's kernels.
#include "aten/native/RnnCells.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace torchneuron {

namespace {
void checkBias(const char* op, const char* name, const std::optional<at::Tensor>& bias, const c10::SymInt& width,
               const at::Tensor& gates) {
  if (!bias.has_value() || !bias->defined()) return;
  TORCH_CHECK(bias->dim() == 1 && bias->sym_size(0) == width, op, ": expected ", name, " of shape [", width,
              "] (gates per cell x hidden size), got ", bias->sym_sizes(), " on ", bias->device());
  TORCH_CHECK(bias->device() == gates.device(), op, ": ", name, " is on ", bias->device(), " but the gates are on ",
              gates.device(), "; move all cell inputs to one device");
}

// The shape rules of CUDA's kernels, with a message that names the op, the device and every shape.
void checkCell(const char* op, int64_t n_gates, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
               const at::Tensor& state, const char* state_name, const std::optional<at::Tensor>& input_bias,
               const std::optional<at::Tensor>& hidden_bias) {
  const bool ok = input_gates.dim() == 2 && state.dim() == 2 &&
                  input_gates.sym_sizes() == hidden_gates.sym_sizes() && input_gates.sym_size(0) == state.sym_size(0) &&
                  input_gates.sym_size(1) == n_gates * state.sym_size(1);
  TORCH_CHECK(ok, op, " on ", input_gates.device(), ": expected input_gates and hidden_gates of shape [batch, ",
              n_gates, " * hidden] and ", state_name, " of shape [batch, hidden]; got input_gates ",
              input_gates.sym_sizes(), ", hidden_gates ", hidden_gates.sym_sizes(), ", ", state_name, " ",
              state.sym_sizes());
  TORCH_CHECK(input_gates.device() == hidden_gates.device() && input_gates.device() == state.device(), op,
              ": inputs are on ", input_gates.device(), ", ", hidden_gates.device(), " and ", state.device(),
              "; move all cell inputs to one device");
  checkBias(op, "input_bias", input_bias, input_gates.sym_size(1), input_gates);
  checkBias(op, "hidden_bias", hidden_bias, input_gates.sym_size(1), input_gates);
}

bool defined(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

at::Tensor withBias(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return defined(bias) ? gates.add(*bias) : gates;
}

} // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> fusedLstmCell(const at::Tensor& input_gates,
                                                             const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                             const std::optional<at::Tensor>& input_bias,
                                                             const std::optional<at::Tensor>& hidden_bias) {
  checkCell("_thnn_fused_lstm_cell", 4, input_gates, hidden_gates, cx, "cx", input_bias, hidden_bias);
  // CPU: gates = linear_hh(hx).add_(linear_ih(input)); here the matmuls come without their biases.
  at::Tensor gates = defined(hidden_bias) ? hidden_gates.add(*hidden_bias)
                                          : hidden_gates.clone(at::MemoryFormat::Contiguous);
  gates.add_(withBias(input_gates, input_bias));
  auto g = gates.unsafe_chunk(4, 1);
  g[0].sigmoid_();
  g[1].sigmoid_();
  g[2].tanh_();
  g[3].sigmoid_();
  at::Tensor cy = g[1].mul(cx).add_(g[0].mul(g[2]));
  at::Tensor hy = g[3].mul(cy.tanh());
  return {hy, cy, gates};  // the activated gates are the workspace the backward needs
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fusedLstmCellBackward(const std::optional<at::Tensor>& grad_hy,
                                                                     const std::optional<at::Tensor>& grad_cy,
                                                                     const at::Tensor& cx, const at::Tensor& cy,
                                                                     const at::Tensor& workspace, bool has_bias) {
  if (!defined(grad_hy) && !defined(grad_cy)) return {};
  TORCH_CHECK(workspace.dim() == 2 && cx.dim() == 2 && workspace.sym_size(1) == 4 * cx.sym_size(1) &&
                  cx.sym_sizes() == cy.sym_sizes() && workspace.sym_size(0) == cx.sym_size(0),
              "_thnn_fused_lstm_cell_backward_impl on ", workspace.device(),
              ": expected workspace [batch, 4 * hidden] and cx, cy [batch, hidden]; got workspace ",
              workspace.sym_sizes(), ", cx ", cx.sym_sizes(), ", cy ", cy.sym_sizes());
  auto g = workspace.unsafe_chunk(4, 1);
  const at::Tensor &in = g[0], &forget = g[1], &cell = g[2], &out = g[3];
  const at::Tensor tanh_cy = cy.tanh();
  // d cy, through hy = out * tanh(cy) and directly from grad_cy
  // sigmoid_backward(g, s) = g * s * (1 - s) and tanh_backward(g, t) = g * (1 - t^2): one kernel each, the ones
  // autograd uses for the CPU's unfused cell.
  at::Tensor grad_c = defined(grad_cy) ? grad_cy->clone(at::MemoryFormat::Contiguous) : at::zeros_like(cx);
  at::Tensor grad_out;
  if (defined(grad_hy)) {
    grad_c.add_(at::tanh_backward(grad_hy->mul(out), tanh_cy));
    grad_out = at::sigmoid_backward(grad_hy->mul(tanh_cy), out);
  } else {
    grad_out = at::zeros_like(out, at::MemoryFormat::Contiguous);
  }
  at::Tensor grad_in = at::sigmoid_backward(grad_c.mul(cell), in);
  at::Tensor grad_forget = at::sigmoid_backward(grad_c.mul(cx), forget);
  at::Tensor grad_cell = at::tanh_backward(grad_c.mul(in), cell);
  at::Tensor grad_gates = at::cat({grad_in, grad_forget, grad_cell, grad_out}, 1);
  at::Tensor grad_cx = grad_c.mul_(forget);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> fusedGruCell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                                const std::optional<at::Tensor>& hidden_bias) {
  checkCell("_thnn_fused_gru_cell", 3, input_gates, hidden_gates, hx, "hx", input_bias, hidden_bias);
  auto i = withBias(input_gates, input_bias).unsafe_chunk(3, 1);
  auto h = withBias(hidden_gates, hidden_bias).unsafe_chunk(3, 1);
  at::Tensor reset = h[0].add(i[0]).sigmoid_();
  at::Tensor update = h[1].add(i[1]).sigmoid_();
  at::Tensor fresh = i[2].add(h[2].mul(reset)).tanh_();
  at::Tensor hy = hx.sub(fresh).mul_(update).add_(fresh);
  return {hy, at::cat({reset, update, fresh, hx, h[2]}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fusedGruCellBackward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  TORCH_CHECK(grad_hy.dim() == 2 && workspace.dim() == 2 && workspace.sym_size(0) == grad_hy.sym_size(0) &&
                  workspace.sym_size(1) == 5 * grad_hy.sym_size(1),
              "_thnn_fused_gru_cell_backward on ", workspace.device(),
              ": expected grad_hy [batch, hidden] and workspace [batch, 5 * hidden]; got grad_hy ",
              grad_hy.sym_sizes(), ", workspace ", workspace.sym_sizes());
  auto w = workspace.unsafe_chunk(5, 1);
  const at::Tensor &reset = w[0], &update = w[1], &fresh = w[2], &hx = w[3], &hidden_new = w[4];
  at::Tensor grad_update = at::sigmoid_backward(grad_hy.mul(hx.sub(fresh)), update);
  at::Tensor grad_hx = grad_hy.mul(update);
  // d(pre-activation of the new gate) = grad_hy * (1 - update) * (1 - fresh^2)
  at::Tensor grad_fresh = at::tanh_backward(grad_hy.sub(grad_hx), fresh);
  at::Tensor grad_hidden_new = grad_fresh.mul(reset);
  at::Tensor grad_reset = at::sigmoid_backward(grad_fresh.mul(hidden_new), reset);
  at::Tensor grad_input_gates = at::cat({grad_reset, grad_update, grad_fresh}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_reset, grad_update, grad_hidden_new}, 1);
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

} // namespace torchneuron
