"""nn.LSTM / nn.GRU / nn.LSTMCell / nn.GRUCell on neuron. ATen sends PrivateUse1 tensors to the fused cell
ops (_thnn_fused_lstm_cell, _thnn_fused_gru_cell and their backwards), which PyTorch implements for CUDA only;
torchneuron implements them (csrc/aten/native/RnnCells.cpp). Checked against the CPU, forward and backward,
training and eval, with the shapes and options models use."""

import copy

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

TOL = {"rtol": 1e-5, "atol": 1e-5}
tree_map, tree_leaves = torch.utils._pytree.tree_map, torch.utils._pytree.tree_leaves


def _run(module: nn.Module, inputs: tuple, device: str, train: bool):
    module = copy.deepcopy(module).to(device).train(train)
    inputs = tree_map(lambda t: t.detach().to(device).requires_grad_(train), inputs)
    out = module(*inputs)
    results = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if train:
        sum(t.sin().sum() for t in results).backward()
        results += [t.grad for t in tree_leaves(inputs)] + [p.grad for p in module.parameters()]
    return [t.detach().cpu() for t in results]


def _compare(module: nn.Module, inputs: tuple, train: bool) -> None:
    expected = _run(module, inputs, "cpu", train)
    got = _run(module, inputs, "neuron", train)
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected)):
        torch.testing.assert_close(a, b, **TOL, msg=lambda m, i=i: f"result {i}: {m}")


# name -> (module, inputs): hidden states as the modules take them (none, a tensor, an (h, c) tuple)
CASES = {
    "lstm_cell": lambda: (nn.LSTMCell(6, 5), (torch.randn(3, 6),)),
    "lstm_cell_state": lambda: (nn.LSTMCell(6, 5), (torch.randn(3, 6), (torch.randn(3, 5), torch.randn(3, 5)))),
    "lstm_cell_no_bias": lambda: (nn.LSTMCell(6, 5, bias=False), (torch.randn(3, 6),)),
    "gru_cell": lambda: (nn.GRUCell(6, 5), (torch.randn(3, 6), torch.randn(3, 5))),
    "gru_cell_no_bias": lambda: (nn.GRUCell(6, 5, bias=False), (torch.randn(3, 6),)),
    "gru_cell_unbatched": lambda: (nn.GRUCell(6, 5), (torch.randn(6),)),
    "lstm": lambda: (nn.LSTM(6, 5), (torch.randn(3, 4, 6),)),
    "lstm_2layer_bidirectional_batch_first": lambda: (
        nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True), (torch.randn(4, 3, 6),)),
    "lstm_proj_with_state": lambda: (nn.LSTM(6, 5, proj_size=3),
                                     (torch.randn(3, 4, 6), (torch.randn(1, 4, 3), torch.randn(1, 4, 5)))),
    "lstm_unbatched": lambda: (nn.LSTM(6, 5), (torch.randn(3, 6),)),
    "gru": lambda: (nn.GRU(6, 5), (torch.randn(3, 4, 6), torch.randn(1, 4, 5))),
    "gru_2layer_bidirectional": lambda: (nn.GRU(6, 5, num_layers=2, bidirectional=True), (torch.randn(3, 4, 6),)),
    "rnn_tanh": lambda: (nn.RNN(6, 5, num_layers=2), (torch.randn(3, 4, 6),)),
    "rnn_relu": lambda: (nn.RNN(6, 5, nonlinearity="relu"), (torch.randn(3, 4, 6),)),
}


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_cpu(name, train):
    torch.manual_seed(0)
    module, inputs = CASES[name]()
    _compare(module, inputs, train)


def test_lstm_dropout_between_layers_is_seeded_like_the_cpu():
    torch.manual_seed(0)
    module = nn.LSTM(6, 5, num_layers=2, dropout=0.5)
    x = torch.randn(3, 4, 6)
    outs = []
    for device in ("cpu", "neuron"):
        torch.manual_seed(1)
        outs.append(copy.deepcopy(module).to(device).train()(x.to(device))[0].detach().cpu())
    torch.testing.assert_close(outs[1], outs[0], **TOL)


def test_packed_sequences():
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 3, batch_first=True)
    x = torch.randn(3, 5, 4)
    lengths = torch.tensor([5, 3, 2])
    outs = []
    for device in ("cpu", "neuron"):
        m = copy.deepcopy(lstm).to(device)
        packed = nn.utils.rnn.pack_padded_sequence(x.to(device), lengths, batch_first=True)
        out, (h, c) = m(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        padded.sum().backward()
        outs.append([padded.detach().cpu(), h.detach().cpu(), c.detach().cpu(), m.weight_ih_l0.grad.cpu()])
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, **TOL)


class _RnnLM(nn.Module):
    def __init__(self, vocab=40, d=16, cell=nn.LSTM):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = cell(d, d, num_layers=2, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        out, _ = self.rnn(self.emb(ids))
        return self.head(out)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_rnn_language_model_trains_like_the_cpu(cell):
    torch.manual_seed(0)
    model = _RnnLM(cell=cell)
    data = torch.randint(0, 40, (4, 9), generator=torch.Generator().manual_seed(0))
    losses = {}
    params = {}
    for device in ("cpu", "neuron"):
        m = copy.deepcopy(model).to(device)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        ids = data.to(device)
        losses[device] = []
        for _ in range(4):
            logits = m(ids[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, 40), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            losses[device].append(loss.item())
        params[device] = [p.detach().cpu() for p in m.parameters()]
    torch.testing.assert_close(torch.tensor(losses["neuron"]), torch.tensor(losses["cpu"]), **TOL)
    assert losses["neuron"][-1] < losses["neuron"][0]
    for a, b in zip(params["neuron"], params["cpu"]):
        torch.testing.assert_close(a, b, **TOL)


def test_double_backward_through_lstm_cell():
    """With create_graph, autograd differentiates the cell through _thnn_differentiable_lstm_cell_backward."""
    torch.manual_seed(0)
    cell = nn.LSTMCell(3, 2)
    results = []
    for device in ("cpu", "neuron"):
        m = copy.deepcopy(cell).to(device)
        x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1)).to(device).requires_grad_()
        h, c = m(x)
        (g,) = torch.autograd.grad(h.sum() + c.sum(), x, create_graph=True)
        (gg,) = torch.autograd.grad(g.square().sum(), x)
        results.append([g.detach().cpu(), gg.cpu()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, **TOL)


def test_fused_cells_trace_under_fake_tensor_mode():
    """Dynamo and torch.export trace with fake neuron tensors: both cells and their backwards have Meta kernels."""
    for module in (nn.GRU(4, 3), nn.LSTM(4, 3), nn.GRUCell(4, 3)):
        module = module.to("neuron")
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            x = mode.from_tensor(torch.empty(5, 2, 4, device="neuron"))
            out = module(x if not isinstance(module, nn.GRUCell) else x[0])
            out = out[0] if isinstance(out, tuple) else out
            assert out.shape[-1] == 3 and out.device.type == "neuron"
            out.sum().backward()


def test_bad_cell_shapes_name_the_op_device_and_shapes():
    gates = torch.randn(2, 8, device="neuron")
    with pytest.raises(RuntimeError, match=r"_thnn_fused_gru_cell on neuron:0: expected input_gates.*\[2, 8\]"):
        torch.ops.aten._thnn_fused_gru_cell(gates, gates, torch.randn(2, 3, device="neuron"))
