"""`torchneuron.wrap_nki(kernel)`: a kernel as a callable on torch tensors, with a launch grid."""

from __future__ import annotations

import pytest
import torch

import torchneuron
from tests.custom_ops import kernels
from tests.nki.nki_test_utils import neuron_randn
from torchneuron.nki import NkiError


def test_current_api_kernel_with_and_without_lnc_grid():
    k = torchneuron.wrap_nki(kernels.add_returning)
    a, b = neuron_randn(200, 8), neuron_randn(200, 8, seed=1)
    torch.testing.assert_close(k(a, b).cpu(), a.cpu() + b.cpu())
    torch.testing.assert_close(k[1](a, b).cpu(), a.cpu() + b.cpu())
    assert "add_returning" in repr(k)


def test_legacy_kernel_with_an_spmd_grid():
    k = torchneuron.wrap_nki(kernels.legacy_rows_plus_one)
    x = neuron_randn(512, 4)
    torch.testing.assert_close(k[4](x).cpu(), x.cpu() + 1)


def test_a_plain_function_is_taken_as_a_current_api_kernel():
    def plain(x, out):
        kernels.copy_into.func(x, out)

    x, out = neuron_randn(16, 16), torch.empty(16, 16, device="neuron")
    torchneuron.wrap_nki(plain)(x, out)
    torch.testing.assert_close(out.cpu(), x.cpu())


def test_cpu_tensors_are_refused():
    with pytest.raises(NkiError, match=r"called through torchneuron.wrap_nki.*argument a \(4, 4\) is a cpu tensor"):
        torchneuron.wrap_nki(kernels.add_returning)(torch.ones(4, 4), torch.ones(4, 4))


def test_inside_torch_compile_the_launch_runs_between_graphs():
    import torch._dynamo

    torch._dynamo.reset()
    k = torchneuron.wrap_nki(kernels.add_returning)

    def f(a, b):
        return k(a.exp(), b) * 2

    a, b = neuron_randn(130, 8), neuron_randn(130, 8, seed=1)
    torch.testing.assert_close(torch.compile(f, backend="neuron")(a, b).cpu(), f(a, b).cpu())
    torch._dynamo.reset()
