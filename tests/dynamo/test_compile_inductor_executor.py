"""TORCHNEURON_SIM_EXECUTOR=inductor: the same partitioned graphs, lowered pieces run by inductor's CPU code on
host views of the device buffers; results are device memory, answers are eager's."""

from __future__ import annotations

import copy
import gc

import torch

from tests.dynamo.conftest import assert_same
from torchneuron.testing.models import CNN


def test_training_step_matches_eager_and_outputs_are_device_memory(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHNEURON_SIM_EXECUTOR", "inductor")
    monkeypatch.setenv("TORCHNEURON_DEBUG_DIR", str(tmp_path))
    torch.manual_seed(0)
    eager = CNN(dropout=0.1).to("neuron")
    compiled = copy.deepcopy(eager)
    x = torch.randn(4, 3, 16, 16, device="neuron")
    torch.manual_seed(1)
    e_out = eager(x)
    e_out.square().mean().backward()
    torch.manual_seed(1)
    gc.collect()  # what earlier tests left in reference cycles is not freed during this call
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    c_out = torch.compile(compiled, backend="neuron")(x)
    assert torch.neuron.memory_allocated() - before >= c_out.numel() * c_out.element_size()
    c_out.square().mean().backward()
    assert_same(c_out, e_out)
    for a, b in zip(eager.parameters(), compiled.parameters()):
        assert_same(b.grad, a.grad, rtol=1e-4, atol=1e-5)
    for a, b in zip(eager.buffers(), compiled.buffers()):  # BatchNorm running stats written in place
        assert_same(b, a)
    assert list(tmp_path.rglob("module.stablehlo.mlir"))  # still lowered and kept
