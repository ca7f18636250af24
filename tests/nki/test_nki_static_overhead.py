"""AWS's architecture guide: a Vector (or Scalar) instruction reading the output of the instruction before it on
its engine, or one of a few elements per partition, costs a static 100 engine cycles on top of its N or 2N;
independent instructions on large tiles do not."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki import cost
from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

VECTOR_NS = 1 / TRN1.vector_ghz
SCALAR_NS = 1 / TRN1.scalar_ghz
N = 1024


def _run(kernel, *args):
    return launch(kernel, args, {}, (), "legacy", TRN1)


def _x(*shape):
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


def test_a_chain_of_dependent_vector_instructions_pays_the_static_overhead() -> None:
    """((x * 2) + 1) * 3: the second and third each read the one before it."""
    def kernel(x):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        lnl.store(out, lnl.multiply(lnl.add(lnl.multiply(t, 2.0), 1.0), 3.0))
        return out

    x = _x(128, N)
    done = _run(kernel, x)
    np.testing.assert_allclose(done.results, (x * 2 + 1) * 3, rtol=1e-6)
    assert done.report.engine_busy_ns["vector"] == pytest.approx((3 * N + 2 * cost.STATIC_CYCLES) * VECTOR_NS)


def test_independent_vector_instructions_on_large_tiles_do_not() -> None:
    def kernel(x):
        out = lnl.ndarray((3, 128, N), x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        for k, v in enumerate((2.0, 3.0, 4.0)):
            lnl.store(out[k], lnl.multiply(t, v))
        return out

    x = _x(128, N)
    done = _run(kernel, x)
    np.testing.assert_allclose(done.results, np.stack([x * 2, x * 3, x * 4]), rtol=1e-6)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(3 * N * VECTOR_NS)


def test_a_tiny_instruction_pays_it_even_when_independent() -> None:
    def kernel(x):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.multiply(lnl.load(x), 2.0))
        return out

    x = _x(128, 1)
    done = _run(kernel, x)
    np.testing.assert_array_equal(done.results, x * 2)
    assert done.report.engine_busy_ns["vector"] == pytest.approx((cost.MIN_II + cost.STATIC_CYCLES) * VECTOR_NS)


def test_a_result_assigned_into_a_tile_is_still_its_producers_output() -> None:
    """LayerNorm v2's bn_stats write into slices of one stats tile (the compiler folds the assignment into the
    instruction); bn_aggr reading that tile depends on the last bn_stats."""
    def kernel(x):
        out = lnl.ndarray((128, 2), x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        stats = lnl.ndarray((128, 12), dtype=np.float32)
        for j in lnl.affine_range(2):
            stats[:, j * 6:(j + 1) * 6] = lnisa.bn_stats(t[:, j * 512:(j + 1) * 512], dtype=np.float32)
        lnl.store(out, lnisa.bn_aggr(stats))
        return out

    x = _x(128, 1024)
    done = _run(kernel, x)
    np.testing.assert_allclose(done.results, np.stack([x.mean(axis=1), x.var(axis=1)], axis=1), rtol=1e-4,
                               atol=1e-5)
    aggr = max(cost.MIN_II, 13 * (12 // 3))
    assert done.report.engine_busy_ns["vector"] == pytest.approx((2 * 512 + aggr + cost.STATIC_CYCLES) * VECTOR_NS)


def test_the_scalar_engine_pays_it_too() -> None:
    """rsqrt of a (P, 1) column on the Scalar engine: MIN_II plus the static overhead."""
    def kernel(x):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.rsqrt(lnl.load(x)))
        return out

    x = np.abs(_x(128, 1)) + 1.0
    done = _run(kernel, x)
    np.testing.assert_allclose(done.results, 1 / np.sqrt(x), rtol=1e-5)
    assert done.report.engine_busy_ns["scalar"] == pytest.approx((cost.MIN_II + cost.STATIC_CYCLES) * SCALAR_NS)
