// Registration only: the fused LSTM/GRU cells ATen's RNN code calls for PrivateUse1 tensors, whose only
// PyTorch kernels are CUDA's (csrc/aten/native/RnnCells.cpp). The GRU cell and its backward also get Meta
// kernels (the same composites), so FakeTensorMode, Dynamo and torch.export can trace a neuron GRU; PyTorch
// ships Meta kernels for the LSTM cell already.
#include <torch/library.h>

#include "aten/native/RnnCells.h"

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(torchneuron::fusedLstmCell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(torchneuron::fusedLstmCellBackward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(torchneuron::fusedGruCell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(torchneuron::fusedGruCellBackward));
}

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_thnn_fused_gru_cell", TORCH_FN(torchneuron::fusedGruCell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(torchneuron::fusedGruCellBackward));
}
