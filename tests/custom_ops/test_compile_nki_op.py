"""Inside torch.compile(backend="neuron") an nki_op is one node: on the sim a partition boundary whose kernels
run on the NKI simulator between compiled pieces; graphs with NKI ops match eager."""

from __future__ import annotations

import warnings

import pytest
import torch

import torchneuron
from tests.custom_ops import kernels
from tests.nki.nki_test_utils import neuron_randn
from torchneuron.dynamo import partition


@torchneuron.nki_op("tn_compile::add", mutates_args=())
def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return kernels.add_returning(a, b)


add.register_autograd(lambda ctx, g: (g, g), setup_context=lambda ctx, inputs, output: None)


@torchneuron.nki_op("tn_compile::increment_", mutates_args=("x",))
def increment_(x: torch.Tensor) -> None:
    kernels.increment_in_place(x)


@pytest.fixture(autouse=True)
def _fresh():
    import torch._dynamo

    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()
    yield
    torch._dynamo.reset()


def f(a, b):
    return (add(a.exp(), b) * 2).sum(0)


def test_forward_matches_eager_and_the_op_is_an_eager_piece_without_a_fallback_warning():
    a, b = neuron_randn(130, 16), neuron_randn(130, 16, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no CompileFallbackWarning: an NKI op is not a missing lowering
        got = torch.compile(f, backend="neuron", fullgraph=True)(a, b)
    torch.testing.assert_close(got.cpu(), f(a, b).cpu(), rtol=2e-5, atol=2e-5)
    m = torch.neuron.get_dynamo_metrics()
    assert m["eager_pieces"] == 1 and m["lowered_pieces"] == 2 and m["fallback_ops"] == {}


def test_strict_mode_accepts_nki_ops(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_COMPILE_FALLBACK", "error")
    a, b = neuron_randn(8, 8), neuron_randn(8, 8, seed=1)
    torch.testing.assert_close(torch.compile(f, backend="neuron")(a, b).cpu(), f(a, b).cpu(), rtol=2e-5, atol=2e-5)


def test_the_partitioner_classifies_the_node_as_eager():
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda a, b: add(a, b).exp(), tracing_mode="fake")(torch.empty(4, 4), torch.empty(4, 4))
    kinds, reasons = partition.classify(gm, {})
    nki = [n for n in kinds if n.target is torch.ops.tn_compile.add.default]
    assert len(nki) == 1 and kinds[nki[0]] == partition.EAGER and nki[0] not in reasons


def test_backward_through_the_op_compiles_and_matches_eager():
    a, b = neuron_randn(64, 8).requires_grad_(), neuron_randn(64, 8, seed=1).requires_grad_()
    torch.compile(f, backend="neuron")(a, b).sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    f(a, b).sum().backward()
    torch.testing.assert_close(ga.cpu(), a.grad.cpu(), rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(gb.cpu(), b.grad.cpu())


def test_a_mutating_op_inside_a_compiled_graph():
    def g(x):
        y = x * 2
        increment_(y)
        return y + 1

    x = neuron_randn(32, 8)
    torch.testing.assert_close(torch.compile(g, backend="neuron")(x).cpu(), (x * 2 + 2).cpu())
