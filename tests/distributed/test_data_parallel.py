"""nn.DataParallel: a clear error pointing at DDP for neuron modules; CPU modules behave as without
torchneuron (PyTorch runs them as they are when no accelerator DataParallel supports is present)."""

import pytest
import torch
from torch import nn


def test_neuron_module_gets_a_clear_error():
    model = nn.Linear(4, 2).to("neuron")
    with pytest.raises(RuntimeError, match="nn.DataParallel does not support the neuron device") as e:
        nn.DataParallel(model)
    assert "DistributedDataParallel" in str(e.value) and "torchrun" in str(e.value)


def test_device_ids_on_neuron_get_the_same_error():
    with pytest.raises(RuntimeError, match="use DistributedDataParallel|DistributedDataParallel"):
        nn.DataParallel(nn.Linear(4, 2), device_ids=[0, 1])


def test_cpu_module_runs_as_it_would_without_torchneuron():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    wrapped = nn.DataParallel(model)
    x = torch.randn(3, 4)
    assert wrapped.device_ids == []
    assert torch.equal(wrapped(x), model(x))
    assert wrapped.module is model
