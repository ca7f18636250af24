"""Loop-invariant instructions (core.hoist): an instruction repeating, with unchanged operands, what it computed in
the previous iteration of its innermost loop is charged once; anything that changes, or writes into a tile
written before, is charged every time. Values are always computed (each iteration's result is right)."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

VECTOR_NS = 1 / TRN1.vector_ghz
N = 512
PRODUCT_NS = 2 * N * VECTOR_NS  # one tensor_tensor of two streamed [128, 512] fp32 operands


def _run(kernel, *args):
    return launch(kernel, args, {}, (), "legacy", TRN1)


def _inputs(*shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s, dtype=np.float32) for s in shapes]


def test_a_product_invariant_in_its_loop_is_charged_once() -> None:
    """Mamba v2's `delta * u` inside the state loop: computed once, every iteration's sum still right."""
    def kernel(x, y):
        out = lnl.ndarray((4, 128, N), x.dtype, buffer=lnl.shared_hbm)
        a, b = lnl.load(x), lnl.load(y)
        for s in lnl.affine_range(4):
            lnl.store(out[s], lnisa.tensor_tensor(a, b, op=lnl.multiply))
        return out

    x, y = _inputs((128, N), (128, N))
    done = _run(kernel, x, y)
    np.testing.assert_array_equal(done.results, np.broadcast_to(x * y, (4, 128, N)))
    assert done.report.engine_busy_ns["vector"] == pytest.approx(PRODUCT_NS)
    assert done.report.instructions["vector"] == 1


def test_an_operand_that_changes_each_iteration_is_charged_each_time() -> None:
    def kernel(x, y):
        out = lnl.ndarray((4, 128, N), x.dtype, buffer=lnl.shared_hbm)
        b = lnl.load(y)
        for s in lnl.affine_range(4):
            lnl.store(out[s], lnisa.tensor_tensor(lnl.load(x[s]), b, op=lnl.multiply))
        return out

    x, y = _inputs((4, 128, N), (128, N))
    done = _run(kernel, x, y)
    np.testing.assert_array_equal(done.results, x * y)
    assert done.report.engine_busy_ns["vector"] == pytest.approx(4 * PRODUCT_NS)


def test_a_value_invariant_only_in_an_outer_loop_is_computed_again() -> None:
    """Mamba v3: the product depends on the inner (sequence-tile) loop, so the compiler cannot keep it across
    iterations of the outer (state) loop; each instance of the inner loop computes it again."""
    def kernel(x, y):
        out = lnl.ndarray((3, 128, 2 * N), x.dtype, buffer=lnl.shared_hbm)
        a, b = lnl.load(x), lnl.load(y)
        for s in lnl.affine_range(3):
            for j in lnl.static_range(2):
                cols = slice(j * N, (j + 1) * N)
                lnl.store(out[s, :, cols], lnisa.tensor_tensor(a[:, cols], b[:, cols], op=lnl.multiply))
        return out

    x, y = _inputs((128, 2 * N), (128, 2 * N))
    done = _run(kernel, x, y)
    np.testing.assert_array_equal(done.results, np.broadcast_to(x * y, (3, 128, 2 * N)))
    assert done.report.engine_busy_ns["vector"] == pytest.approx(6 * PRODUCT_NS)


def test_an_operand_rewritten_between_iterations_is_read_again() -> None:
    """`b` is overwritten inside the loop: the product after it is not the one before it."""
    def kernel(x, y):
        out = lnl.ndarray((3, 128, N), x.dtype, buffer=lnl.shared_hbm)
        a = lnl.load(x)
        b = lnl.load(y)
        for s in lnl.sequential_range(3):
            p = lnisa.tensor_tensor(a, b, op=lnl.multiply)
            lnl.store(out[s], p)
            b[...] = lnl.add(b, 1.0)
        return out

    x, y = _inputs((128, N), (128, N))
    done = _run(kernel, x, y)
    np.testing.assert_allclose(done.results, np.stack([x * (y + k) for k in range(3)]), rtol=1e-6)
    assert done.report.instructions["vector"] == 6


def test_writing_into_a_tile_written_before_is_never_skipped() -> None:
    """An accumulation (`acc += a * b` into the same tile) repeats its product's operands but not its effect."""
    def kernel(x, y):
        out = lnl.ndarray((128, N), x.dtype, buffer=lnl.shared_hbm)
        a, b = lnl.load(x), lnl.load(y)
        acc = lnl.zeros((128, N), lnl.float32, buffer=lnl.sbuf)
        for s in lnl.affine_range(3):
            acc[...] = lnisa.tensor_tensor(acc, a, op=lnl.add)
        lnl.store(out, lnisa.tensor_tensor(acc, b, op=lnl.multiply))
        return out

    x, y = _inputs((128, N), (128, N))
    done = _run(kernel, x, y)
    np.testing.assert_allclose(done.results, 3 * x * y, rtol=1e-5)
    assert done.report.instructions["vector"] == 1 + 3 + 1  # memset, three accumulations, the product


def test_loops_behave_as_ranges() -> None:
    """What kernels do with a loop object besides iterating it; a `break` leaves no loop open."""
    loop = lnl.affine_range(2, 10, 3)
    assert len(loop) == 3 and loop[1] == 5 and list(reversed(loop)) == [8, 5, 2] and 5 in loop
    assert (loop.start, loop.stop, loop.step) == (2, 10, 3) and list(loop) == [2, 5, 8]
    assert lnl.static_range(3) == range(3) and {lnl.static_range(3): 1}[range(3)] == 1

    def kernel(x):
        out = lnl.ndarray((128, N), x.dtype, buffer=lnl.shared_hbm)
        for i in lnl.affine_range(4):
            if i == 1:
                break
        t = lnl.load(x)
        lnl.store(out, lnl.multiply(t, 2.0))
        return out

    (x,) = _inputs((128, N))
    np.testing.assert_array_equal(_run(kernel, x).results, 2 * x)
