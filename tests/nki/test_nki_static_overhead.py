"""AWS's architecture guide: back-to-back Vector (and Scalar) instructions of N << 128 elements per partition, or
each depending on the output of the one before it, cost a static 100 engine cycles on top of their N or 2N.
Here: every operand under `cost.TINY_ELEMENTS` per partition, charged from the second instruction of such a run
on (a tiny instruction among large ones hides it); and an instruction whose engine finished the instructions
before it and then waited for its data (docs/nki.md)."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki import cost
from torchneuron.nki.hardware import TRN1, TRN2
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

N = 1024


def _run(kernel, *args, target=TRN1):
    return launch(kernel, args, {}, (), "legacy", target)


def _x(*shape):
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


def _times_two(x):
    out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.multiply(lnl.load(x), 2.0))
    return out


def _three_in_a_row(x):
    """((x * 2) + 1) * 3 on the Vector engine."""
    out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
    lnl.store(out, lnl.multiply(lnl.add(lnl.multiply(lnl.load(x), 2.0), 1.0), 3.0))
    return out


def test_a_run_of_tiny_vector_instructions_pays_the_static_overhead() -> None:
    x = _x(128, 1)
    done = _run(_three_in_a_row, x)
    np.testing.assert_allclose(done.results, (x * 2 + 1) * 3, rtol=1e-6)
    expected = 3 * cost.MIN_II + 2 * cost.STATIC_CYCLES  # the first of the run hides it
    assert done.report.engine_busy_ns["vector"] == pytest.approx(expected / TRN1.vector_ghz)


def test_one_tiny_instruction_alone_does_not() -> None:
    x = _x(128, 1)
    done = _run(_times_two, x)
    np.testing.assert_array_equal(done.results, x * 2)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(cost.MIN_II / TRN1.vector_ghz)


def test_the_scalar_engine_pays_it_too() -> None:
    """Two rsqrt of a (P, 1) column back to back on the Scalar engine."""
    def kernel(x):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.rsqrt(lnl.rsqrt(lnl.load(x))))
        return out

    x = np.abs(_x(128, 1)) + 1.0
    done = _run(kernel, x)
    np.testing.assert_allclose(done.results, x ** 0.25, rtol=1e-5)
    expected = 2 * cost.MIN_II + cost.STATIC_CYCLES
    assert done.report.engine_busy_ns["scalar"] == pytest.approx(expected / TRN1.scalar_ghz)


def _three_of_one_tile(x):
    """x * 2, x * 3 and x * 4 of one loaded tile: independent, all ready together."""
    n = x.shape[1]
    out = lnl.ndarray((x.shape[0], 3 * n), x.dtype, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    for i in range(3):
        lnl.store(out[:, i * n:(i + 1) * n], lnl.multiply(t, float(i + 2)))
    return out


def test_tiny_is_about_elements_not_cycles() -> None:
    """128 fp32 elements per partition take MIN_II cycles on trn2's Vector engine (two per lane per cycle), but
    that is not N << 128: a run of them, none waiting for another, pays nothing extra."""
    x = _x(128, 128)
    done = _run(_three_of_one_tile, x, target=TRN2)
    np.testing.assert_allclose(done.results, np.concatenate([x * 2, x * 3, x * 4], axis=1), rtol=1e-6)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(3 * cost.MIN_II / TRN2.vector_ghz)


def test_reductions_of_wide_rows_are_not_tiny() -> None:
    """Two row maxima of one loaded tile back to back: their (P, 1) results are small, their inputs are not."""
    def kernel(xy):
        out = lnl.ndarray((128, 2), xy.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(xy)
        lnl.store(out[:, 0:1], lnl.max(t[:, 0:N], axis=1))
        lnl.store(out[:, 1:2], lnl.max(t[:, N:2 * N], axis=1))
        return out

    xy = _x(128, 2 * N)
    done = _run(kernel, xy)
    expected = np.concatenate([xy[:, :N].max(1, keepdims=True), xy[:, N:].max(1, keepdims=True)], 1)
    np.testing.assert_array_equal(done.results, expected)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(2 * N / TRN1.vector_ghz)


def test_a_chain_of_dependent_large_instructions_pays_it_per_wait() -> None:
    """The same chain on [128, 1024]: each reads the one before it, so the second and third wait for their data
    with nothing to run meanwhile: 3N cycles plus two static overheads."""
    x = _x(128, N)
    done = _run(_three_in_a_row, x)
    np.testing.assert_allclose(done.results, (x * 2 + 1) * 3, rtol=1e-6)
    expected = 3 * N + 2 * cost.STATIC_CYCLES
    assert done.report.engine_busy_ns["vector"] == pytest.approx(expected / TRN1.vector_ghz)


def test_independent_work_hides_the_wait_of_a_chain() -> None:
    """Two chains of two on one tile, interleaved by the scheduler: each second link finds its engine busy
    with the other chain's first, so nothing waits and nothing extra is paid."""
    def kernel(x):
        n = x.shape[1]
        out = lnl.ndarray((x.shape[0], 2 * n), x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        a = lnl.multiply(t, 2.0)
        b = lnl.multiply(t, 3.0)
        lnl.store(out[:, 0:n], lnl.add(a, 1.0))
        lnl.store(out[:, n:2 * n], lnl.add(b, 1.0))
        return out

    x = _x(128, N)
    done = _run(kernel, x)
    np.testing.assert_allclose(done.results, np.concatenate([x * 2 + 1, x * 3 + 1], axis=1), rtol=1e-6)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(4 * N / TRN1.vector_ghz)


def test_a_result_that_returns_through_the_scalar_engine_still_waits() -> None:
    """LayerNorm's step: a row sum (Vector), its rsqrt (Scalar), the row scaled by it (Vector). The scale reads
    what the Vector engine's instruction before it produced, one engine removed, and pays the overhead; the
    same scale by an rsqrt of an unrelated input does not."""
    def chained(x, z):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        lnl.store(out, lnl.multiply(t, lnl.rsqrt(lnl.sum(t, axis=1))))
        return out

    def unrelated(x, z):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        lnl.sum(t, axis=1)
        lnl.store(out, lnl.multiply(t, lnl.rsqrt(lnl.load(z))))
        return out

    x, z = np.abs(_x(128, N)) + 1.0, np.abs(_x(128, 1)) + 1.0
    done = _run(chained, x, z)
    np.testing.assert_allclose(done.results, x / np.sqrt(x.sum(axis=1, keepdims=True)), rtol=1e-5)
    assert done.report.engine_busy_ns["vector"] == pytest.approx((2 * N + cost.STATIC_CYCLES) / TRN1.vector_ghz)
    free = _run(unrelated, x, z)
    np.testing.assert_allclose(free.results, x / np.sqrt(z), rtol=1e-5)
    assert free.report.engine_busy_ns["vector"] == pytest.approx(2 * N / TRN1.vector_ghz)
