"""Legacy idioms of AWS's paged-attention kernels (nki-samples contributed/neuron-team-kernels/
flash_paged_attn_varlen), each against a NumPy reference: a dynamic loop driven by a counter tile
(`while scalar(cond):`), HBM indexed by one value read from that tile with the other dimensions taken whole,
`nl.load(..., mode=oob_mode.skip)`, a predicate with fewer free dims than the destination, and a legacy
`tensor_reduce` over axis 1 of a 3-D tile."""

from __future__ import annotations

import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl
from torchneuron.nki.enums import oob_mode
from torchneuron.nki.errors import NkiError
from torchneuron.nki.typing import scalar

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(7)
f32 = standard_normal_f32(RNG)


@nki.jit(mode="simulation")
def _sum_blocks_while(x, n_blocks):
    """Adds blocks x[0], x[1], ... while a counter tile says so: the loop bound is data, read each round."""
    out = nl.ndarray(x.shape[1:], x.dtype, buffer=nl.shared_hbm)
    limit = nl.load(n_blocks)
    step = nl.zeros((1, 1), dtype=np.int32)
    acc = nl.zeros(x.shape[1:], dtype=np.float32)
    cond = nl.less(step, limit)
    while scalar(cond):
        block = nl.load(x[step[0, 0]])  # one value read from a tile: dims 1 and 2 taken whole
        acc[...] = nl.add(acc, block)
        step[...] = nl.add(step, 1)
        cond = nl.less(step, limit)
    nl.store(out, value=acc)
    return out


def test_a_while_loop_on_a_counter_tile_indexes_hbm_by_its_value() -> None:
    x = f32(6, 128, 8)
    got = _sum_blocks_while(x, np.array([[4]], np.int32))
    np.testing.assert_allclose(got, x[:4].sum(axis=0), rtol=1e-5, atol=1e-5)


def test_scalar_of_a_tile_with_more_than_one_element_is_refused() -> None:
    @nki.jit(mode="simulation")
    def k(a):
        t = nl.load(a)
        scalar(t)

    with pytest.raises(NkiError, match="a scalar is one element"):
        k(np.zeros((4, 4), np.float32))


@nki.jit(mode="simulation")
def _gather_rows_skip(x, idx):
    out = nl.ndarray((128, x.shape[1]), x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(x.shape[1])[None, :]
    rows = nl.load(idx)
    buf = nl.zeros((128, x.shape[1]), dtype=x.dtype)
    buf[i_p, i_f] = nl.load(x[rows[i_p, 0], i_f], mode=oob_mode.skip)
    nl.store(out, value=buf)
    return out


def test_load_with_oob_mode_skip_leaves_out_of_bounds_rows_alone() -> None:
    x = f32(64, 16)
    idx = RNG.integers(0, 96, size=(128, 1)).astype(np.int32)  # a third of them past the end
    want = np.where(idx < 64, x[np.minimum(idx[:, 0], 63)], 0.0)
    np.testing.assert_array_equal(_gather_rows_skip(x, idx), want)


@nki.jit(mode="simulation")
def _select_then_max(a, pred):
    out = nl.ndarray((128, a.shape[2]), np.float32, buffer=nl.shared_hbm)
    src = nl.load(a)
    p = nl.load(pred)
    dst = nl.full(a.shape, -1e9, dtype=np.float32)
    nisa.tensor_copy_predicated(src=src, dst=dst, predicate=p)  # (P, 8) against (P, 8, 4)
    m = nisa.tensor_reduce(np.max, dst, axis=(1,), dtype=np.float32)  # axis 1 of a 3-D tile
    nl.store(out, value=m)
    return out


def test_a_predicate_lines_up_from_the_partition_dim_and_axis_1_reduces() -> None:
    a = f32(128, 8, 4)
    pred = (RNG.random((128, 8)) < 0.6).astype(np.uint8)
    pred[:, 0] = 1  # every row keeps at least one k tile
    want = np.where(pred[:, :, None] != 0, a, -1e9).max(axis=1)
    np.testing.assert_array_equal(_select_then_max(a, pred), want)


@nki.jit(mode="simulation")
def _store_rows_through_equal_indices(row, idx):
    out = nl.ndarray((4, row.shape[1]), row.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(row.shape[1])[None, :]
    nl.store(out[i_p[0:4, :], i_f], value=nl.zeros((4, row.shape[1]), dtype=row.dtype))
    rows = nl.load(idx)
    t = nl.load(row.broadcast_to((128, row.shape[1])))
    nl.store(out[rows[i_p, 0], i_f], value=t)  # every partition names row 2: still a 128-partition access
    return out


def test_an_index_tile_with_equal_values_still_spans_its_partitions() -> None:
    row = f32(1, 16)
    got = _store_rows_through_equal_indices(row, np.full((128, 1), 2, np.int32))
    want = np.zeros((4, 16), np.float32)
    want[2] = row[0]
    np.testing.assert_array_equal(got, want)


@nki.jit(mode="simulation")
def _load_vector_into_a_column(v):
    out = nl.ndarray((v.shape[1], 1), v.dtype, buffer=nl.shared_hbm)
    col = nl.ndarray((v.shape[1], 1), dtype=v.dtype)
    col[...] = nl.load(v[1])  # a 1-D HBM row assigned into an (n, 1) tile: the DMA fills the column
    nl.store(out, value=col)
    return out


def test_a_one_d_load_assigned_into_a_column_tile() -> None:
    v = f32(3, 8)
    np.testing.assert_array_equal(_load_vector_into_a_column(v), v[1][:, None])
