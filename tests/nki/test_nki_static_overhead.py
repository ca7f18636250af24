"""AWS's architecture guide: back-to-back Vector (and Scalar) instructions of N << 128 elements per partition cost
a static 100 engine cycles on top of their N or 2N. Here: every operand under `cost.TINY_ELEMENTS` per
partition, and charged from the second instruction of such a run on; a tiny instruction among large ones
hides it, and a chain of large instructions each reading the one before it is not charged (docs/nki.md)."""

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


def test_tiny_is_about_elements_not_cycles() -> None:
    """128 fp32 elements per partition take MIN_II cycles on trn2's Vector engine (two per lane per cycle), but
    that is not N << 128: a run of them pays nothing extra."""
    x = _x(128, 128)
    done = _run(_three_in_a_row, x, target=TRN2)
    np.testing.assert_allclose(done.results, (x * 2 + 1) * 3, rtol=1e-6)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(3 * cost.MIN_II / TRN2.vector_ghz)


def test_reductions_of_wide_rows_are_not_tiny() -> None:
    """Two row maxima back to back: their (P, 1) results are small, their inputs are not."""
    def kernel(x, y):
        out = lnl.ndarray((128, 2), x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out[:, 0:1], lnl.max(lnl.load(x), axis=1))
        lnl.store(out[:, 1:2], lnl.max(lnl.load(y), axis=1))
        return out

    x, y = _x(128, N), _x(128, N) + 1.0
    done = _run(kernel, x, y)
    np.testing.assert_array_equal(done.results, np.concatenate([x.max(1, keepdims=True), y.max(1, keepdims=True)], 1))
    assert done.report.engine_busy_ns["vector"] == pytest.approx(2 * N / TRN1.vector_ghz)


def test_a_chain_of_dependent_large_instructions_costs_its_elements() -> None:
    """The same chain on [128, 1024]: each reads the one before it; 3N cycles, as the documented costs say."""
    x = _x(128, N)
    done = _run(_three_in_a_row, x)
    np.testing.assert_allclose(done.results, (x * 2 + 1) * 3, rtol=1e-6)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(3 * N / TRN1.vector_ghz)
