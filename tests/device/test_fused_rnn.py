"""nn.LSTM / nn.GRU on the simulator as one host call (torchneuron/device/fused_rnn.py): the CPU's results
and gradients, one device op instead of a few per time step."""

import copy

import pytest
import torch

import torchneuron

pytestmark = pytest.mark.sim_only

CASES = {
    "lstm-2layer": lambda: torch.nn.LSTM(6, 5, 2),
    "lstm-bi-batch_first": lambda: torch.nn.LSTM(6, 5, 1, batch_first=True, bidirectional=True),
    "lstm-proj": lambda: torch.nn.LSTM(6, 5, 2, proj_size=3),
    "gru-2layer": lambda: torch.nn.GRU(6, 5, 2),
    "gru-bi-nobias": lambda: torch.nn.GRU(6, 5, 1, bias=False, bidirectional=True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_are_the_cpus(name):
    torch.manual_seed(0)
    cpu = CASES[name]()
    dev = copy.deepcopy(cpu).to("neuron")
    x = torch.randn(7, 3, 6, requires_grad=True)
    dx = x.detach().to("neuron").requires_grad_()
    out, state = cpu(x)
    dout, dstate = dev(dx)
    w = torch.randn(out.shape)
    (out * w).sum().backward()
    (dout * w.to("neuron")).sum().backward()
    torch.testing.assert_close(dout.detach().cpu(), out.detach(), atol=1e-6, rtol=1e-6)
    states = state if isinstance(state, tuple) else (state,)
    dstates = dstate if isinstance(dstate, tuple) else (dstate,)
    for d, c in zip(dstates, states):
        torch.testing.assert_close(d.detach().cpu(), c.detach(), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(dx.grad.cpu(), x.grad, atol=1e-5, rtol=1e-5)
    for (pname, p), q in zip(dev.named_parameters(), cpu.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, atol=1e-5, rtol=1e-5, msg=pname)


def test_initial_state_gets_its_gradient():
    torch.manual_seed(1)
    cpu = torch.nn.LSTM(4, 3, 1)
    dev = copy.deepcopy(cpu).to("neuron")
    x = torch.randn(5, 2, 4)
    h0, c0 = torch.randn(1, 2, 3, requires_grad=True), torch.randn(1, 2, 3, requires_grad=True)
    dh0, dc0 = (t.detach().to("neuron").requires_grad_() for t in (h0, c0))
    cpu(x, (h0, c0))[1][1].sum().backward()
    dev(x.to("neuron"), (dh0, dc0))[1][1].sum().backward()
    torch.testing.assert_close(dh0.grad.cpu(), h0.grad, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(dc0.grad.cpu(), c0.grad, atol=1e-6, rtol=1e-6)


def test_one_device_op_per_call():
    gru = torch.nn.GRU(8, 8, 2).to("neuron").eval()
    x = torch.randn(32, 4, 8, device="neuron")
    with torch.no_grad():
        gru(x)
        torchneuron.reset_executed_ops()
        gru(x)
    ops = torchneuron.executed_ops()
    assert "aten::_thnn_fused_gru_cell" not in ops and sum(ops.values()) <= 3, ops


def test_training_dropout_takes_the_per_cell_path():
    """Inter-layer dropout draws from neuron's generator (the CPU kernel would draw from the CPU's)."""
    lstm = torch.nn.LSTM(4, 4, 2, dropout=0.5).to("neuron").train()
    torchneuron.reset_executed_ops()
    lstm(torch.randn(3, 2, 4, device="neuron"))
    ops = torchneuron.executed_ops()
    assert ops.get("aten::bernoulli_.float", 0) == 1, ops  # the mask, from neuron's generator
    assert ops.get("aten::mm", 0) + ops.get("aten::addmm", 0) >= 6, ops  # per step and layer, not one call


def test_compiled_lstm_matches_eager():
    torch.manual_seed(2)
    lstm = torch.nn.LSTM(4, 3, 1).to("neuron")
    x = torch.randn(5, 2, 4, device="neuron")
    eager = lstm(x)[0]
    compiled = torch.compile(lambda t: lstm(t)[0], backend="neuron")(x)
    torch.testing.assert_close(compiled.detach().cpu(), eager.detach().cpu(), atol=1e-5, rtol=1e-5)


def test_inference_mode_takes_the_fused_path():
    torch.manual_seed(3)
    cpu = torch.nn.GRU(4, 4, 2)
    dev = copy.deepcopy(cpu).to("neuron")
    x = torch.randn(6, 2, 4)
    with torch.inference_mode():
        torchneuron.reset_executed_ops()
        out = dev(x.to("neuron"))[0]
        assert "aten::_thnn_fused_gru_cell" not in torchneuron.executed_ops()
    torch.testing.assert_close(out.cpu(), cpu(x)[0].detach(), atol=1e-6, rtol=1e-6)


def test_compiled_gru_inference_matches_eager():
    torch.manual_seed(4)
    gru = torch.nn.GRU(4, 3, 2).to("neuron").eval()
    x = torch.randn(5, 2, 4, device="neuron")
    with torch.no_grad():
        eager = gru(x)[0]
        compiled = torch.compile(lambda t: gru(t)[0], backend="neuron")(x)
    torch.testing.assert_close(compiled.cpu(), eager.cpu(), atol=1e-5, rtol=1e-5)
