"""Legacy affine indexing (`t[k * 128 + i.p, m * 512 + i.x]`, the published tutorials' style) is a strided
view when every expression steps along its own axis inside the tensor, and a gather otherwise; either way
the values are NumPy's fancy indexing of the same arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.language as nl
from torchneuron.nki.core.buffers import HBM, Storage
from torchneuron.nki.core.indexing import mgrid
from torchneuron.nki.core.tensor import NkiTensor
from torchneuron.nki import dtypes


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
