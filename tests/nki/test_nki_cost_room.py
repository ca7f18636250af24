"""The cost model lets the next iteration's load run ahead of this one's compute only as far as SBUF (and
PSUM) hold both iterations' tiles: when one iteration's tiles fill SBUF, the load of the next waits for this
one's input to be dead and its compute for this one's store, so load, compute and store add up instead of
overlapping. Checked against the engines' own busy times, on trn2."""

from __future__ import annotations

import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.hardware import TRN2
from torchneuron.nki.runner import launch

ROWS = 128 * 8


def _exp_four_times(cols: int):
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            t = nl.ndarray((128, cols), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
            u = nl.ndarray((128, cols), x.dtype, buffer=nl.sbuf)
            for _ in range(4):
                nisa.activation(dst=u, op=nl.exp, data=t)
            nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=u)
        return out

    return kernel


def _estimate(cols: int):
    x = np.random.default_rng(0).random((ROWS, cols), dtype=np.float32)
    done = launch(_exp_four_times(cols).func, (x,), {}, (), "current", TRN2)
    np.testing.assert_allclose(done.results, np.exp(x), rtol=1e-6)
    return done.report


def test_tiles_of_two_iterations_that_fit_overlap_load_compute_and_store() -> None:
    cols = TRN2.sbuf_bytes_per_partition // (4 * 4) - 64  # t and u of two iterations fit
    report = _estimate(cols)
    busy = report.engine_busy_ns
    assert report.latency_ns < 0.8 * (busy["scalar"] + busy["dma"])


def test_tiles_of_one_iteration_filling_sbuf_serialise_the_pipeline() -> None:
    cols = TRN2.sbuf_bytes_per_partition // (2 * 4) - 64  # t and u of one iteration fill SBUF
    report = _estimate(cols)
    assert report.peak_sbuf_bytes_per_partition > TRN2.sbuf_bytes_per_partition // 2
    busy = report.engine_busy_ns
    # every iteration but the first and last: the next load and this store (all 16 queues each) then compute
    assert report.latency_ns >= 0.95 * (busy["scalar"] + busy["dma"])
    assert report.latency_ns == pytest.approx(busy["scalar"] + busy["dma"], rel=0.15)


def test_psum_tiles_of_one_iteration_filling_psum_wait_for_the_copy_out() -> None:
    """Each iteration's matmul result takes all 8 banks: the next iteration's matmuls wait for the Vector
    engine's copy of this one (only a slice is stored, so the engines, not DMA, bound the kernel)."""
    iterations = 16

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((iterations, 128, 512), np.float32, buffer=nl.shared_hbm)
        a_sb = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        b_sb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_sb, src=a)
        nisa.dma_copy(dst=b_sb, src=b)
        for i in nl.affine_range(iterations):
            acc = nl.ndarray((128, 4096), np.float32, buffer=nl.psum)
            for j in nl.affine_range(8):
                nisa.nc_matmul(dst=acc[:, j * 512:(j + 1) * 512], stationary=a_sb,
                               moving=b_sb[:, j * 512:(j + 1) * 512])
            res = nl.ndarray((128, 4096), np.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[i], src=res[:, 0:512])
        return out

    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 4096), dtype=np.float32)
    done = launch(kernel.func, (a, b), {}, (), "current", TRN2)
    np.testing.assert_allclose(done.results[2], (a.T @ b)[:, :512], rtol=1e-4, atol=1e-3)
    busy = done.report.engine_busy_ns
    assert busy["dma"] < 0.5 * busy["tensor"]
    assert done.report.latency_ns >= 0.95 * (busy["tensor"] + busy["vector"])
