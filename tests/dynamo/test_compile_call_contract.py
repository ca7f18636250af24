"""What a compiled function promises about its arguments (torchneuron/dynamo/call_contract.py): CPU inputs give
neuron results with one warning, as AWS's TorchNeuron documents; unsupported mode=/options= warn once."""

from __future__ import annotations

import warnings

import pytest
import torch

from torchneuron.dynamo import call_contract


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(call_contract, "_said", set())


def _affine(a, b):
    return a @ b + 1


def test_cpu_inputs_give_neuron_results_with_gradients_and_one_warning():
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2)
    f = torch.compile(_affine, backend="neuron")
    with pytest.warns(UserWarning, match="called on CPU tensors.*neuron tensors") as record:
        out = f(a, b)
        f(a, b)
    assert len([w for w in record if "CPU tensors" in str(w.message)]) == 1
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), _affine(a, b))
    out.sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(3, 2) @ b.T)


def test_cpu_in_place_update_reaches_the_callers_tensor():
    def bump(x):
        x.add_(1)
        return x * 2

    x = torch.zeros(4)
    with pytest.warns(UserWarning, match="CPU tensors"):
        out = torch.compile(bump, backend="neuron")(x)
    assert torch.equal(x, torch.ones(4)) and out.device.type == "neuron"
    assert torch.equal(out.cpu(), torch.full((4,), 2.0))


def test_neuron_inputs_warn_nothing(neuron):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = torch.randn(3, 4, device=neuron), torch.randn(4, 2, device=neuron)
        out = torch.compile(_affine, backend="neuron")(a, b)
    assert out.device.type == "neuron"


@pytest.mark.parametrize(("kwargs", "said"), [({"mode": "reduce-overhead"}, "mode='reduce-overhead' is ignored"),
                                              ({"mode": "max-autotune"}, "mode='max-autotune' is ignored"),
                                              ({"options": {"trace.enabled": True}}, r"options=\{trace.enabled\}")])
def test_unsupported_settings_warn_once(neuron, kwargs, said):
    x = torch.randn(3, device=neuron)
    with pytest.warns(UserWarning, match=said) as record:
        torch.compile(torch.sin, backend="neuron", **kwargs)(x)
        torch.compile(torch.cos, backend="neuron", **kwargs)(x)
    assert len([w for w in record if "ignored" in str(w.message)]) == 1
