"""The NC-v2/v3 GpSimd gathers and PRNG-state instructions (reference §2.6): `local_gather`,
`nonzero_with_count`, `sequence_bounds`, `rand_get_state` / `rand_set_state` and the `NkiTensor.vector_select`
view, each against a NumPy reference written from AWS's documented semantics, plus one broken call each
raising the documented error at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
import torchneuron.nki.legacy as lnki
import torchneuron.nki.legacy.isa as lisa
import torchneuron.nki.legacy.language as lnl
from torchneuron import nki

from nki_test_utils import expect_error


# ---- local_gather ---------------------------------------------------------------------------------

def local_gather_reference(src: np.ndarray, index: np.ndarray, elem: int, valid: int | None) -> np.ndarray:
    """AWS's NumPy equivalent (test_nki_isa_local_gather.py): per 16-partition core, the index slice flattened
    partition-first (order='F'), first `valid` kept; hardware indices count elements of the flattened free
    dims and fetch `elem` contiguous ones. Returns (P, valid, elem)."""
    p = src.shape[0]
    flat = src.reshape(p, -1)
    per_core = index.size // (p // 16)
    valid = per_core if valid is None else valid
    out = np.empty((p, valid, elem), src.dtype)
    for core in range(p // 16):
        rows = slice(16 * core, 16 * core + 16)
        idx = index[rows].flatten(order="F")[:valid].astype(np.int64)
        for e in range(elem):
            out[rows, :, e] = flat[rows][:, idx + e]
    return out


@settings(max_examples=12)
@given(cores=st.integers(1, 8), k=st.integers(1, 4), elem=st.sampled_from([1, 2, 4, 8]),
       rows=st.integers(1, 24), cut=st.integers(0, 15), dt=st.sampled_from([np.float32, np.int32, np.float16]),
       seed=st.integers(0, 999))
def test_local_gather(cores: int, k: int, elem: int, rows: int, cut: int, dt, seed: int) -> None:
    p = 16 * cores
    rng = np.random.default_rng(seed)
    src = rng.uniform(-100, 100, (p, rows, elem)).astype(dt)
    index = (rng.integers(0, rows, (p, k)) * elem).astype(np.uint16)   # element offsets of row starts
    valid = max(1, 16 * k - cut)

    @nki.jit
    def kern(s, i):
        out = nl.ndarray((p, valid, elem), s.dtype, buffer=nl.shared_hbm)
        ts = nl.ndarray(s.shape, s.dtype, buffer=nl.sbuf)
        ti = nl.ndarray(i.shape, i.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ts, src=s)
        nisa.dma_copy(dst=ti, src=i)
        r = nl.ndarray((p, valid * elem), s.dtype, buffer=nl.sbuf)
        nisa.local_gather(dst=r, src_buffer=ts, index=ti, num_elem_per_idx=elem, num_valid_indices=valid)
        nisa.dma_copy(dst=out, src=r.reshape((p, valid, elem)))
        return out

    np.testing.assert_array_equal(nki.simulate(kern)(src, index), local_gather_reference(src, index, elem, valid))


def test_local_gather_legacy_doc_example() -> None:
    """The documented legacy example: (128, 512, 4) source, (128, 4) indices, 4 elements each -> (128, 4, 16, 4)."""
    rng = np.random.default_rng(0)
    src = rng.random((128, 512, 4)).astype(np.float32)
    index = np.tile(rng.integers(0, 512, (16, 4)).astype(np.uint16), (8, 1))

    @lnki.jit(mode="simulation")
    def kern(s, i):
        out = lnl.ndarray((128, 4, 16, 4), dtype=s.dtype, buffer=lnl.shared_hbm)
        t = lisa.local_gather(lnl.load(s), lnl.load(i), 4, 64)
        lnl.store(out, t)
        return out

    # the documented NumPy semantics: row indices, each fetching a whole 4-element row of the partition
    want = np.stack([src[16 * c:16 * c + 16][:, index[16 * c:16 * c + 16].flatten(order="F").astype(np.int64)]
                     for c in range(8)], axis=0).reshape(128, 64, 4)
    assert np.array_equal(want, local_gather_reference(src, index * 4, 4, None))
    np.testing.assert_array_equal(kern(src, index * 4).reshape(128, 64, 4), want)


def test_local_gather_cost_follows_the_documented_formula() -> None:
    @nki.jit
    def kern(s, i):
        out = nl.ndarray((16, 32), s.dtype, buffer=nl.shared_hbm)
        ts = nl.ndarray(s.shape, s.dtype, buffer=nl.sbuf)
        ti = nl.ndarray(i.shape, i.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ts, src=s)
        nisa.dma_copy(dst=ti, src=i)
        r = nl.ndarray((16, 32), s.dtype, buffer=nl.sbuf)
        nisa.local_gather(dst=r, src_buffer=ts, index=ti, num_elem_per_idx=2)
        nisa.dma_copy(dst=out, src=r)
        return out

    report = nki.estimate(kern, np.ones((16, 64), np.float32), np.zeros((16, 1), np.uint16))
    c = ((28 + 4 * 2) / (4 * 2)) / min(4 / 4, 2)
    cycles = 150 + 16 * 2 / c
    assert report.instructions["gpsimd"] == 1
    assert report.engine_busy_ns["gpsimd"] == pytest.approx(cycles / 1.2, rel=0.05)


def test_local_gather_index_must_be_uint16() -> None:
    @nki.jit
    def kern(s, i):
        ts = nl.ndarray(s.shape, s.dtype, buffer=nl.sbuf)
        ti = nl.ndarray(i.shape, i.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ts, src=s)
        nisa.dma_copy(dst=ti, src=i)
        r = nl.ndarray((16, 16), s.dtype, buffer=nl.sbuf)
        nisa.local_gather(dst=r, src_buffer=ts, index=ti)  # BAD
        return ts

    expect_error("err_unsupported_dtype", kern, np.ones((16, 8), np.float32), np.zeros((16, 1), np.int32))


# ---- nonzero_with_count -----------------------------------------------------------------------------

def nonzero_reference(x: np.ndarray, before: np.ndarray, offset: int, pad: int) -> np.ndarray:
    """AWS's documented behaviour, on partitions 0, 16, ..., 112 only; other partitions keep `before`."""
    out = before.copy()
    for p in range(0, x.shape[0], 16):
        idx = [i + offset for i in range(x.shape[1]) if x[p, i] != 0]
        out[p] = idx + [pad] * (x.shape[1] - len(idx)) + [len(idx)]
    return out


def test_nonzero_with_count_documented_example() -> None:
    x = np.zeros((16, 8), np.float32)
    x[0] = [0, 1, 1, 0, 0, 1, 0, 0]

    @nki.jit
    def kern(a):
        out = nl.ndarray((16, 9), nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray((16, 9), nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=r, value=7)
        nisa.nonzero_with_count(dst=r, src=t, index_offset=16, padding_val=-1)
        nisa.dma_copy(dst=out, src=r)
        return out

    got = nki.simulate(kern)(x)
    assert got[0].tolist() == [17, 18, 21, -1, -1, -1, -1, -1, 3]
    assert (got[1:] == 7).all()


@settings(max_examples=12)
@given(cores=st.integers(1, 8), extra=st.integers(0, 15), t=st.integers(1, 40), density=st.floats(0, 1),
       offset=st.integers(-50, 1000), pad=st.integers(-5, 5), dt=st.sampled_from([np.float32, np.int32]),
       seed=st.integers(0, 999))
def test_nonzero_with_count(cores: int, extra: int, t: int, density: float, offset: int, pad: int, dt,
                            seed: int) -> None:
    p = min(128, 16 * (cores - 1) + 1 + extra)
    rng = np.random.default_rng(seed)
    x = np.where(rng.random((p, t)) < density, rng.integers(1, 9, (p, t)), 0).astype(dt)

    @nki.jit
    def kern(a):
        out = nl.ndarray((p, t + 1), nl.int32, buffer=nl.shared_hbm)
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        r = nl.ndarray((p, t + 1), nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=r, value=-9)
        nisa.nonzero_with_count(dst=r, src=ta, index_offset=offset, padding_val=pad)
        nisa.dma_copy(dst=out, src=r)
        return out

    want = nonzero_reference(x, np.full((p, t + 1), -9, np.int32), offset, pad)
    np.testing.assert_array_equal(nki.simulate(kern)(x), want)


def test_nonzero_with_count_dst_needs_the_count_slot() -> None:
    @nki.jit
    def kern(a):
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray(a.shape, nl.int32, buffer=nl.sbuf)
        nisa.nonzero_with_count(dst=r, src=t)  # BAD
        return a

    expect_error("err_shape_mismatch", kern, np.ones((16, 8), np.float32))


def test_nonzero_with_count_needs_nc_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")

    @nki.jit
    def kern(a):
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray((16, 9), nl.int32, buffer=nl.sbuf)
        nisa.nonzero_with_count(dst=r, src=t)  # BAD
        return a

    expect_error("err_invalid_argument", kern, np.ones((16, 8), np.float32))


# ---- sequence_bounds ---------------------------------------------------------------------------------

def sequence_bounds_reference(sequence: np.ndarray) -> np.ndarray:
    """AWS's NumPy equivalent (nki.isa.sequence_bounds docs), for one row."""
    n = len(sequence)
    lo, hi = np.zeros(n, sequence.dtype), np.zeros(n, sequence.dtype)
    lo[0] = 0 if sequence[0] != 0 else n
    for i in range(1, n):
        lo[i] = n if sequence[i] == 0 else lo[i - 1] if sequence[i] == sequence[i - 1] else i
    hi[-1] = n if sequence[-1] != 0 else -1
    for i in range(n - 2, -1, -1):
        hi[i] = -1 if sequence[i] == 0 else hi[i + 1] if sequence[i] == sequence[i + 1] else i + 1
    return np.vstack((lo, hi))


def test_sequence_bounds_documented_example() -> None:
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.int32)

    @lnki.jit(mode="simulation")
    def kern(s):
        out = lnl.ndarray((1, 2, 9), dtype=s.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lisa.sequence_bounds(segment_ids=lnl.load(s)))
        return out

    assert kern(ids)[0].tolist() == [[9, 1, 1, 3, 3, 3, 9, 7, 7], [-1, 3, 3, 6, 6, 6, -1, 9, 9]]


@settings(max_examples=12)
@given(n=st.integers(1, 600), segments=st.integers(1, 12), dt=st.sampled_from([np.float32, np.int32]),
       out_dt=st.sampled_from([np.float32, np.int32]), seed=st.integers(0, 999))
def test_sequence_bounds(n: int, segments: int, dt, out_dt, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, segments, n)
    ids = np.where(rng.random(n) < 0.7, np.sort(ids), ids).astype(dt).reshape(1, n)  # mostly sorted runs

    @nki.jit
    def kern(s):
        out = nl.ndarray((1, 2, n), out_dt, buffer=nl.shared_hbm)
        t = nl.ndarray(s.shape, s.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=s)
        r = nl.ndarray((1, 2, n), out_dt, buffer=nl.sbuf)
        nisa.sequence_bounds(dst=r, segment_ids=t)
        nisa.dma_copy(dst=out, src=r)
        return out

    want = sequence_bounds_reference(ids[0].astype(np.float64)).reshape(1, 2, n).astype(out_dt)
    np.testing.assert_array_equal(nki.simulate(kern)(ids), want)


def test_sequence_bounds_partition_dim_must_be_one() -> None:
    @nki.jit
    def kern(s):
        t = nl.ndarray(s.shape, s.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=s)
        r = nl.ndarray((2, 2, 8), nl.int32, buffer=nl.sbuf)
        nisa.sequence_bounds(dst=r, segment_ids=t)  # BAD
        return s

    expect_error("err_shape_mismatch", kern, np.ones((2, 8), np.int32))


# ---- rand_get_state / rand_set_state -----------------------------------------------------------------

@settings(max_examples=8)
@given(p=st.integers(1, 128), f=st.integers(1, 64), seed=st.integers(0, 2**32 - 1))
def test_rand_state_round_trip_replays_the_stream(p: int, f: int, seed: int) -> None:
    """set(S) then get() returns S; restoring a state read earlier replays the same random numbers."""
    seeds = np.random.default_rng(seed).integers(0, 2**32, (p, 6), dtype=np.uint64).astype(np.uint32)

    @nki.jit
    def kern(s):
        out = nl.ndarray((3, p, f), nl.uint32, buffer=nl.shared_hbm)
        back = nl.ndarray((p, 6), nl.uint32, buffer=nl.shared_hbm)
        ts = nl.ndarray((p, 6), nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ts, src=s)
        nisa.rand_set_state(src_seeds=ts, engine=nisa.gpsimd_engine)
        got = nl.ndarray((p, 6), nl.uint32, buffer=nl.sbuf)
        nisa.rand_get_state(dst=got, engine=nisa.gpsimd_engine)
        nisa.dma_copy(dst=back, src=got)
        for i in range(2):  # two draws from the same state
            nisa.rand_set_state(src_seeds=got, engine=nisa.gpsimd_engine)
            r = nl.ndarray((p, f), nl.uint32, buffer=nl.sbuf)
            nisa.rng(dst=r, engine=nisa.gpsimd_engine)
            nisa.dma_copy(dst=out[i], src=r)
        r = nl.ndarray((p, f), nl.uint32, buffer=nl.sbuf)
        nisa.rng(dst=r, engine=nisa.gpsimd_engine)  # the stream moves on
        nisa.dma_copy(dst=out[2], src=r)
        return out, back

    draws, back = nki.simulate(kern)(seeds)
    np.testing.assert_array_equal(back, seeds)
    np.testing.assert_array_equal(draws[0], draws[1])
    assert p * f < 4 or not np.array_equal(draws[1], draws[2])


def test_rand_state_vector_engine_needs_nc_v4() -> None:
    @nki.jit
    def kern(s):
        t = nl.ndarray((128, 24), nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=s)
        nisa.rand_set_state(src_seeds=t, engine=nisa.vector_engine)  # BAD
        return s

    expect_error("err_invalid_argument", kern, np.zeros((128, 24), np.uint32))


def test_rand_get_state_needs_six_uint32_words_on_gpsimd() -> None:
    @nki.jit
    def kern(s):
        t = nl.ndarray((128, 8), nl.uint32, buffer=nl.sbuf)
        nisa.rand_get_state(dst=t, engine=nisa.gpsimd_engine)  # BAD
        return s

    expect_error("err_shape_mismatch", kern, np.zeros((1, 1), np.uint32))


# ---- NkiTensor.vector_select ---------------------------------------------------------------------------

@settings(max_examples=12)
@given(rows=st.integers(1, 64), p=st.integers(1, 128), f=st.integers(1, 16), g=st.integers(1, 4),
       seed=st.integers(0, 999))
def test_vector_select(rows: int, p: int, f: int, g: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, f, g)).astype(np.float32)
    offsets = rng.integers(0, rows, (p, 1)).astype(np.int32)

    @nki.jit
    def kern(tab, off):
        out = nl.ndarray((p, f, g), tab.dtype, buffer=nl.shared_hbm)
        to = nl.ndarray((p, 1), off.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=to, src=off)
        t = nl.ndarray((p, f, g), tab.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=tab.vector_select(0, to))
        nisa.dma_copy(dst=out, src=t)
        return out

    np.testing.assert_array_equal(nki.simulate(kern)(table, offsets), table[offsets[:, 0]])


def test_vector_select_out_of_bound_rows_are_skipped_with_oob_skip() -> None:
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    offsets = np.array([[2], [9], [0]], np.int32)

    @nki.jit
    def kern(tab, off):
        out = nl.ndarray((3, 3), tab.dtype, buffer=nl.shared_hbm)
        to = nl.ndarray((3, 1), off.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=to, src=off)
        t = nl.ndarray((3, 3), tab.dtype, buffer=nl.sbuf)
        nisa.memset(dst=t, value=-1.0)
        nisa.dma_copy(dst=t, src=tab.vector_select(0, to), oob_mode=nisa.oob_mode.skip)
        nisa.dma_copy(dst=out, src=t)
        return out

    got = nki.simulate(kern)(table, offsets)
    np.testing.assert_array_equal(got, np.stack([table[2], np.full(3, -1, np.float32), table[0]]))


def test_vector_select_only_on_hbm() -> None:
    @nki.jit
    def kern(tab, off):
        to = nl.ndarray((4, 1), off.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=to, src=off)
        t = nl.ndarray(tab.shape, tab.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=tab)
        t.vector_select(0, to)  # BAD
        return tab

    expect_error("err_unsupported_memory", kern, np.ones((4, 3), np.float32), np.zeros((4, 1), np.int32))
