#pragma once
// The fused LSTM/GRU cell ops. ATen's RNN code (nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell) calls them for
// CUDA, XPU and PrivateUse1 tensors, but PyTorch implements them for CUDA only, so without these a neuron RNN
// fails at its first step. Each is a composite of ATen ops on the device, written in the order of the CPU's
// unfused cell (ATen's RNN.cpp) so that neuron and CPU results agree; the backward formulas are CUDA's.
#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace torchneuron {

// (hy, cy, workspace): workspace is [B, 4H] holding the activated gates (input, forget, cell, output).
std::tuple<at::Tensor, at::Tensor, at::Tensor> fusedLstmCell(const at::Tensor& input_gates,
                                                             const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                             const std::optional<at::Tensor>& input_bias,
                                                             const std::optional<at::Tensor>& hidden_bias);

// (grad_gates, grad_cx, grad_bias); all undefined when neither gradient is.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fusedLstmCellBackward(const std::optional<at::Tensor>& grad_hy,
                                                                     const std::optional<at::Tensor>& grad_cy,
                                                                     const at::Tensor& cx, const at::Tensor& cy,
                                                                     const at::Tensor& workspace, bool has_bias);

// (hy, workspace): workspace is [B, 5H] holding (reset, update, new gate, hx, hidden part of the new gate).
std::tuple<at::Tensor, at::Tensor> fusedGruCell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                                const std::optional<at::Tensor>& hidden_bias);

// (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fusedGruCellBackward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias);

} // namespace torchneuron
