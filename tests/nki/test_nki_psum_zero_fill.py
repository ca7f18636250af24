"""Legacy `acc = nl.zeros(..., buffer=nl.psum)` then `acc += nc_matmul(...)` is AWS's accumulation idiom: the
compiler starts the accumulation group there (its first matmul overwrites; on NeuronCore-v3 a matmul
accumulating onto PSUM that another instruction initialised is undefined), so the zero fill costs nothing.
Any other use of the zeros keeps its memset: read first, accumulated into partly, or the current API's explicit
`nisa.memset`. Values are NumPy's either way. Hand-computed on trn1 (Vector 1.12 GHz)."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron import nki
from torchneuron.nki import isa as nisa
from torchneuron.nki import language as nl
from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

VECTOR_NS = 1 / TRN1.vector_ghz
N = 512
COPY_NS = N * VECTOR_NS  # the PSUM -> SBUF copy of the result
FILL_NS = N * VECTOR_NS  # a memset of [128, 512] fp32


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s, dtype=np.float32) for s in ((2, 128, 128), (2, 128, N))]


def _run(kernel):
    a, b = _inputs()
    done = launch(kernel, (a, b), {}, (), "legacy", TRN1)
    return done, a[0].T @ b[0] + a[1].T @ b[1]


def _accumulated(before=None, rows=128):
    def kernel(a, b):
        out = lnl.ndarray((128, N), np.float32, buffer=lnl.shared_hbm)
        acc = lnl.zeros((128, N), np.float32, buffer=lnl.psum)
        if before is not None:
            before(acc)
        for k in lnl.affine_range(2):
            acc[0:rows, :] += lnisa.nc_matmul(lnl.load(a[k]), lnl.load(b[k]))
        lnl.store(out, lnl.copy(acc))
        return out
    return kernel


def test_zeros_accumulated_into_by_matmuls_cost_no_memset() -> None:
    done, expected = _run(_accumulated())
    np.testing.assert_allclose(done.results, expected, rtol=1e-4, atol=1e-4)
    assert done.report.instructions["vector"] == 1  # the copy out; the zero fill became the group's start
    assert done.report.engine_busy_ns["vector"] == pytest.approx(COPY_NS)


def test_zeros_read_before_the_matmul_keep_their_memset() -> None:
    def peek(acc):
        lnl.copy(acc)  # reads the zeros: they must be there

    done, expected = _run(_accumulated(peek))
    np.testing.assert_allclose(done.results, expected, rtol=1e-4, atol=1e-4)
    assert done.report.instructions["vector"] == 3  # memset, the peek, the copy out
    assert done.report.engine_busy_ns["vector"] >= FILL_NS + 2 * COPY_NS


def test_zeros_accumulated_into_partly_keep_their_memset() -> None:
    """Only the first 64 rows are accumulated into: the other rows are the zeros, read by the copy out."""
    a, b = _inputs()
    done = launch(_accumulated(rows=64), (a[:, :, :64], b), {}, (), "legacy", TRN1)
    expected = np.zeros((128, N), np.float32)
    expected[:64] = a[0, :, :64].T @ b[0] + a[1, :, :64].T @ b[1]
    np.testing.assert_allclose(done.results, expected, rtol=1e-4, atol=1e-4)
    assert done.report.instructions["vector"] == 2
    assert done.report.engine_busy_ns["vector"] >= FILL_NS + COPY_NS


def test_the_current_api_memset_is_an_instruction() -> None:
    """`nisa.memset` is what the kernel asked for (accumulating onto it is the kernel's own choice)."""
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((128, N), nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, N), nl.float32, buffer=nl.psum)
        nisa.memset(dst=acc, value=0.0)
        for k in nl.affine_range(2):
            x = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
            y = nl.ndarray((128, N), nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=x, src=a[k])
            nisa.dma_copy(dst=y, src=b[k])
            nisa.nc_matmul(dst=acc, stationary=x, moving=y, accumulate=True)
        res = nl.ndarray((128, N), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out, src=res)
        return out

    a, b = _inputs()
    done = launch(kernel.func, (a, b), {}, (), "current", TRN1)
    np.testing.assert_allclose(done.results, a[0].T @ b[0] + a[1].T @ b[1], rtol=1e-4, atol=1e-4)
    assert done.report.instructions["vector"] == 2
    assert done.report.engine_busy_ns["vector"] >= FILL_NS + COPY_NS
