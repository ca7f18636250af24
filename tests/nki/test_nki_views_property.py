"""Property: indexing and view methods on an NkiTensor select exactly the elements NumPy would (HBM
indexing keeps a >= 2-D result 2-D: the last integer-indexed dims stay, size 1, as NKI's rule says)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki


@st.composite
def shape_and_key(draw):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=2, max_size=4)))
    key = []
    for n in shape[: draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            key.append(draw(st.integers(0, n - 1)))
        else:
            start = draw(st.integers(0, n - 1))
            stop = draw(st.integers(start + 1, n))
            key.append(slice(start, stop, draw(st.integers(1, 3))))
    return shape, tuple(key)


def nki_index(x: np.ndarray, key: tuple) -> np.ndarray:
    """NumPy's basic indexing, with integers turned into size-1 slices from the last one back until a
    result of a >= 2-D array is 2-D."""
    ints = [i for i, k in enumerate(key) if isinstance(k, int)]
    kept: set[int] = set()
    while ints and x.ndim - len(ints) < 2 and x.ndim >= 2:
        kept.add(ints.pop())
    return x[tuple(slice(k, k + 1) if i in kept else k for i, k in enumerate(key))]


@settings(max_examples=40)
@given(shape_and_key())
def test_hbm_basic_indexing_matches_numpy(case) -> None:
    shape, key = case
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    want = nki_index(x, key)
    assert want.size == x[key].size and (want.ndim >= 2 or x[key].ndim >= 2 or x.ndim < 2)

    @nki.jit
    def k(a):
        view = a[key]
        assert view.shape == want.shape
        out = nl.ndarray(view.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=view)
        return out

    np.testing.assert_array_equal(nki.simulate(k)(x), want)


@settings(max_examples=25)
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple), data=st.data())
def test_permute_reshape_views_match_numpy(shape, data) -> None:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    order = tuple(data.draw(st.permutations(range(len(shape)))))
    want = x.transpose(order).reshape(-1)

    @nki.jit
    def k(a):
        view = a.permute(*order).reshape((a.size,))
        out = nl.ndarray((a.size,), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=view)
        return out

    np.testing.assert_array_equal(nki.simulate(k)(x), want)
