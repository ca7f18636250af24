"""Legacy affine indexing (`t[k * 128 + i.p, m * 512 + i.x]`, the published tutorials' style) is a strided
view when every expression steps along its own axis inside the tensor, and a gather otherwise; either way
the values are NumPy's fancy indexing of the same arrays. An integer beside an expression with a constant axis
(`t[i_p, 0]`, AWS's LayerNorm reading its mean) is such a view too, and costs what the slice costs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.language as nl
from torchneuron.nki.core.buffers import HBM, Storage
from torchneuron.nki.core.indexing import arange, mgrid
from torchneuron.nki.core.tensor import NkiTensor
from torchneuron.nki import dtypes
from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.runner import launch


def _hbm(values: np.ndarray) -> NkiTensor:
    st_ = Storage(values.shape, dtypes.float32, HBM, "t", 0, data=values.reshape(-1).copy())
    return NkiTensor.whole(st_)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), p=st.integers(1, 8), f=st.integers(1, 8),
       r0=st.integers(0, 40), c0=st.integers(0, 40), rs=st.integers(1, 3), cs=st.integers(1, 3),
       transpose=st.booleans())
def test_affine_access_reads_what_numpy_indexing_reads(rows, cols, p, f, r0, c0, rs, cs, transpose) -> None:
    values = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    t = _hbm(values)
    g = mgrid[0:p, 0:f]
    ri, ci = (r0 + rs * g.p, c0 + cs * g.x) if not transpose else (r0 + rs * g.x, c0 + cs * g.p)
    inside = (ri.values < rows).all() and (ci.values < cols).all()
    if not inside:
        return  # out of range without a mask: the documented error (covered in test_nki_errors)
    view = t[ri, ci]
    np.testing.assert_array_equal(view.read(), values[ri.values, ci.values])
    # a plain step-per-axis access in dimension order needs no index array; a transposing one gathers
    if p > 1 and f > 1:
        assert (view.index is None) == (not transpose)


def test_tutorial_style_kernel_uses_strided_views_and_matches_numpy() -> None:
    @nki.jit(mode="simulation")
    def k(lhsT, rhs):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
        i_l, i_r = nl.mgrid[0:128, 0:M], nl.mgrid[0:128, 0:N]
        i_o = nl.mgrid[0:M, 0:N]
        tiles = nl.ndarray((K // 128, nl.par_dim(128), M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kk in nl.affine_range(K // 128):
            tiles[kk, i_l.p, i_l.x] = nl.load(lhsT[kk * 128 + i_l.p, i_l.x])
        acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
        for kk in nl.affine_range(K // 128):
            acc[...] += nl.matmul(tiles[kk, i_l.p, i_l.x], nl.load(rhs[kk * 128 + i_r.p, i_r.x]), transpose_x=True)
        nl.store(out[i_o.p, i_o.x], value=nl.copy(acc))
        return out

    rng = np.random.default_rng(5)
    lhsT, rhs = rng.standard_normal((384, 64), dtype=np.float32), rng.standard_normal((384, 96), dtype=np.float32)
    np.testing.assert_allclose(k(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), p=st.integers(1, 8), r0=st.integers(0, 40),
       j=st.integers(0, 40), column=st.booleans())
def test_an_expression_beside_an_integer_is_the_strided_row_or_column(rows, cols, p, r0, j, column) -> None:
    values = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    t = _hbm(values)
    key = (r0 + arange(p)[:, None], j) if column else (j, r0 + arange(p)[None, :])
    np_key = tuple(k.values if not isinstance(k, int) else k for k in key)
    if (r0 + p > (rows if column else cols)) or j >= (cols if column else rows):
        return  # out of range without a mask: the documented error (covered in test_nki_errors)
    view = t[key]
    assert view.index is None
    np.testing.assert_array_equal(view.read(), values[np_key])


def _scale_kernel(column):
    def kernel(x, stats):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t, s = nl.load(x), nl.load(stats)
        nl.store(out, lnisa.tensor_scalar(data=t, op0=np.subtract, operand0=column(s, 0), op1=np.multiply,
                                          operand1=column(s, 1)))
        return out
    return kernel


def test_a_column_read_by_arange_costs_what_the_slice_costs() -> None:
    """As a `tensor_scalar` operand the column is a per-partition scalar (N Vector cycles, not 2N)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 2048), dtype=np.float32)
    stats = rng.standard_normal((128, 2), dtype=np.float32)
    runs = [launch(_scale_kernel(column), (x, stats), {}, (), "legacy", TRN1) for column in (
        lambda s, j: s[nl.arange(128)[:, None], j], lambda s, j: s[nl.mgrid[0:128, 0:1].p, j],
        lambda s, j: s[:, j:j + 1])]
    for run in runs:
        np.testing.assert_allclose(run.results, (x - stats[:, :1]) * stats[:, 1:], rtol=1e-6)
        assert run.report.engine_busy_ns == runs[-1].report.engine_busy_ns
        assert run.report.latency_ns == runs[-1].report.latency_ns
