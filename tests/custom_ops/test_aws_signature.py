"""nki_op as AWS TorchNeuron's users call it: no mutates_args, a positional one, a returned written input."""

import torch

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki, nki_op, wrap_nki


@nki.jit
def _add_one(x):
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=x, src=t)


def _inc(x: torch.Tensor) -> torch.Tensor:
    wrap_nki(_add_one)(x)
    return x  # the written argument itself, as AWS's examples return it


inc_positional = nki_op("awssig::inc_positional", _inc, ("x",))


@nki_op("awssig::plus_one")
def plus_one(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    wrap_nki(_add_one)(y)
    return y


def test_no_mutates_args_eager_and_compiled():
    a = torch.randn(128, 4, device="neuron")
    torch.testing.assert_close(plus_one(a).cpu(), a.cpu() + 1)
    f = torch.compile(lambda t: plus_one(t * 2) - 1, backend="neuron", fullgraph=True)
    torch.testing.assert_close(f(a).cpu(), a.cpu() * 2)


def test_returning_the_written_argument_eager_and_compiled():
    a = torch.zeros(128, 4, device="neuron")
    r = inc_positional(a)
    assert r.data_ptr() != a.data_ptr()  # a copy: custom ops may not return an input
    assert torch.equal(r.cpu(), torch.ones(128, 4)) and torch.equal(a.cpu(), torch.ones(128, 4))
    f = torch.compile(lambda t: inc_positional(t) * 3, backend="neuron", fullgraph=True)
    b = torch.zeros(128, 4, device="neuron")
    assert torch.equal(f(b).cpu(), torch.full((128, 4), 3.0)) and torch.equal(b.cpu(), torch.ones(128, 4))
