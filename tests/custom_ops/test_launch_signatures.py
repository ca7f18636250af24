"""A device launch whose signature already ran fully checked skips the simulator's bookkeeping (cost model, on-chip
live ranges) but computes the same values; any other signature, a launch steered by tensor values, an argument the
key cannot describe, and every NumPy launch are checked in full."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import torchneuron  # noqa: F401
import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from tests.nki.nki_test_utils import neuron_randn
from torchneuron import nki
from torchneuron.nki import launch_signatures
from torchneuron.nki.core import memory


@nki.jit
def scaled(x, factor):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def many_live_tiles(x, tiles):
    """`tiles` live [128, 1024] fp32 tiles (4 KiB per partition each): 60 overflow every target's SBUF."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    keep = []
    for _ in range(tiles):
        t = nl.ndarray((128, 1024), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        keep.append(t)
    acc = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=acc, src=x)
    for t in keep:
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def gather_rows(table, idx):
    """Rows of `table` picked by `idx` values: an indirect DMA, whose addresses the data decides."""
    out = nl.ndarray((4, 16), nl.float32, buffer=nl.shared_hbm)
    ids = nl.ndarray((4, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=idx)
    rows = nl.ndarray((4, 16), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap([[16, 4], [1, 16]], vector_offset=ids, indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out


@pytest.fixture(autouse=True)
def _fresh():
    launch_signatures.forget()
    yield
    launch_signatures.forget()


@pytest.fixture
def placements(monkeypatch):
    """How many on-chip allocations were entered into the live ranges (only checked launches do)."""
    count = [0]
    original = memory.OnChipMemory.place

    def spy(self, *args, **kwargs):
        count[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(memory.OnChipMemory, "place", spy)
    return count


def test_repeat_computes_the_same_values_and_reports_the_checked_estimate(placements):
    x = neuron_randn(64, 32)
    first = scaled(x, 2.0)
    report = scaled.report
    assert placements[0] == 1
    for seed in range(1, 4):  # new values, same signature: values computed, bookkeeping skipped
        y = neuron_randn(64, 32, seed=seed)
        torch.testing.assert_close(scaled(y, 2.0).cpu(), y.cpu() * 2.0, rtol=0, atol=0)
    assert placements[0] == 1
    assert scaled.report == report and scaled.report is not report
    torch.testing.assert_close(first.cpu(), x.cpu() * 2.0, rtol=0, atol=0)


@pytest.mark.parametrize("change", ["shape", "dtype", "scalar", "stride", "scalar type"])
def test_any_change_of_signature_is_checked_again(placements, change):
    x = neuron_randn(64, 32)
    scaled(x, 2.0)
    other = {"shape": (neuron_randn(32, 64), 2.0), "dtype": (x.to(torch.bfloat16), 2.0), "scalar": (x, 3.0),
             "stride": (neuron_randn(32, 64).t(), 2.0), "scalar type": (x, 2)}[change]
    out = scaled(*other)
    assert placements[0] == 2
    torch.testing.assert_close(out.cpu().float(), (other[0].cpu().float() * other[1]).to(out.dtype).float())


def test_capacity_errors_still_raise_after_a_smaller_signature_passed():
    x = neuron_randn(128, 1024)
    many_live_tiles(x, 2)
    many_live_tiles(x, 2)  # a repeat
    with pytest.raises(nki.NkiError, match="err_sbuf_capacity_exceeded"):
        many_live_tiles(x, 60)
    with pytest.raises(nki.NkiError, match="err_sbuf_capacity_exceeded"):
        many_live_tiles(x, 60)  # a failed launch is never remembered as checked


def test_launches_steered_by_tensor_values_are_always_checked(placements):
    table = neuron_randn(10, 16)
    for rows in ([7, 0, 3, 7], [1, 2, 3, 4]):
        idx = torch.tensor(rows, dtype=torch.int32).reshape(4, 1).to("neuron")
        torch.testing.assert_close(gather_rows(table, idx).cpu(), table.cpu()[rows], rtol=0, atol=0)
    assert placements[0] == 2 * 2  # two tiles per launch, both launches checked
    assert not launch_signatures._checked.get(gather_rows.func)


def test_arguments_the_key_cannot_describe_are_always_checked(placements):
    class Factor(float):  # a float subclass could carry anything: not a value the key knows
        pass

    x = neuron_randn(64, 32)
    scaled(x, Factor(2.0))
    scaled(x, Factor(2.0))
    assert placements[0] == 2


def test_numpy_launches_are_always_checked(placements):
    x = np.ones((64, 32), np.float32)
    scaled(x, 2.0)
    scaled(x, 2.0)
    assert placements[0] == 2


@nki.jit
def rows_of(x, rows):
    """The rows `rows` (a slice: unhashable before Python 3.12) of x, through SBUF."""
    sub = x[rows, :]
    out = nl.ndarray(sub.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(sub.shape, nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=sub)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_unhashable_arguments_are_always_checked(placements):
    x = neuron_randn(64, 32)
    for _ in range(2):
        torch.testing.assert_close(rows_of(x, slice(8, 24)).cpu(), x.cpu()[8:24], rtol=0, atol=0)
    assert placements[0] == (2 if sys.version_info < (3, 12) else 1)


@nki.jit
def transposed_product(a, b):
    """(a.T @ b) + 1 through the Tensor engine: a [k, m], b [k, n] with k, m <= 128, m <= n <= 512."""
    k, m = a.shape
    kb, n = b.shape
    out = nl.ndarray((m, n), nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((k, m), nl.float32, buffer=nl.sbuf)
    b_sb = nl.ndarray((kb, n), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sb, src=a)
    nisa.dma_copy(dst=b_sb, src=b)
    acc = nl.ndarray((m, n), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a_sb, moving=b_sb)
    y = nl.ndarray((m, n), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=acc, op0=nl.add, operand0=1.0)
    back = nl.ndarray((m, m), nl.float32, buffer=nl.psum)  # a transpose too (n >= m), its result unused
    nisa.nc_transpose(dst=back, data=y[:, 0:m])
    nisa.dma_copy(dst=out, src=y)
    return out


def test_a_repeat_skips_operand_checks_and_a_new_signature_runs_them(monkeypatch):
    from torchneuron.nki.instructions import elementwise, matmul

    calls = {"buffer": 0, "on_chip": 0}

    def spy(name, original):
        def counted(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)
        return counted

    monkeypatch.setattr(matmul, "check_buffer", spy("buffer", matmul.check_buffer))
    monkeypatch.setattr(elementwise, "check_on_chip", spy("on_chip", elementwise.check_on_chip))
    a, b = neuron_randn(32, 16), neuron_randn(32, 64, seed=1)
    want = a.cpu().T @ b.cpu() + 1
    torch.testing.assert_close(transposed_product(a, b).cpu(), want)
    first = dict(calls)
    assert first["buffer"] > 0 and first["on_chip"] > 0
    for seed in (2, 3):  # a repeat: values computed, operand checks skipped
        b = neuron_randn(32, 64, seed=seed)
        torch.testing.assert_close(transposed_product(a, b).cpu(), a.cpu().T @ b.cpu() + 1)
    assert calls == first
    transposed_product(neuron_randn(32, 8), neuron_randn(32, 64))  # another signature: checked in full
    assert calls["buffer"] > first["buffer"] and calls["on_chip"] > first["on_chip"]


def test_operand_errors_raise_on_every_launch_of_a_bad_signature():
    a, b = neuron_randn(32, 16), neuron_randn(16, 64)  # contraction sizes differ
    for _ in range(2):
        with pytest.raises(nki.NkiError, match="contracts over partitions"):
            transposed_product(a, b)
