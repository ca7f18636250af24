"""Code AWS's compiler and simulator accept that this simulator used to refuse, each against a NumPy
reference: masked tail tiles and gathers are not accessed where the mask is off, `nl.sum` over non-adjacent
free axes, allocation callbacks called with keywords, `if hbm_arg:` on optional arguments, bf16 activation
bias, Python `and`/`or` of predicates, indexing with an mgrid result, PSUM spilled instead of refused."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.compiler as ncc
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl
from torchneuron.nki.errors import NkiWarning

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(33)
f32 = standard_normal_f32(RNG)


@nki.jit(mode="simulation")
def _copy_rows_sliced(a):
    """Tiles of 128 rows taken with slices; the tail slice runs past the tensor's end, its mask cuts it."""
    n = a.shape[0]
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((n + 127) // 128):
        i_p = t * 128 + nl.arange(128)[:, None]
        buf = nl.ndarray((128, a.shape[1]), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=buf, src=a[t * 128:(t + 1) * 128, :], mask=(i_p < n))
        nl.store(out[t * 128:(t + 1) * 128, :], value=buf, mask=(i_p < n))
    return out


def test_masked_tail_slice_past_the_end_is_not_accessed() -> None:
    x = f32(200, 24)
    np.testing.assert_array_equal(_copy_rows_sliced(x), x)


def test_unmasked_tail_slice_past_the_end_is_still_out_of_bound() -> None:
    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray((128, 8), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a[128:256, :]))
        return out

    with pytest.raises(nki.NkiError, match="err_tensor_access_out_of_bound"):
        k(f32(160, 8))


def test_masked_indirect_gather_rows_are_not_accessed() -> None:
    """Rows whose index is out of range but masked off are neither read nor written."""

    @nki.jit(mode="simulation")
    def k(a, idx, n):
        out = nl.ndarray((128, a.shape[1]), a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(a.shape[1])[None, :]
        rows = nl.load(idx)
        v = nl.load(a[rows[i_p, 0], i_f], mask=(i_p < n))
        nl.store(out[i_p, i_f], v, mask=(i_p < n))
        return out

    x = f32(50, 16)
    idx = np.full((128, 1), 10_000, np.int32)
    idx[:90, 0] = RNG.integers(0, 50, 90)
    with pytest.warns(NkiWarning, match="never written"):  # the masked-off output rows
        got = k(x, idx, 90)
    np.testing.assert_array_equal(got[:90], x[idx[:90, 0]])


def test_legacy_integer_true_division_then_floor() -> None:
    """resize-nearest's index arithmetic: `nl.floor(iota / w, dtype=int32)` is floor(pos / w), not a rounded
    quotient."""

    @nki.jit(mode="simulation")
    def k():
        out = nl.ndarray((128, 1), nl.int32, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        pos = nisa.iota(2176 + i_p, dtype=nl.int32)
        nl.store(out, nl.floor(pos / 38, dtype=nl.int32))
        return out

    np.testing.assert_array_equal(k()[:, 0], (2176 + np.arange(128)) // 38)


def test_nl_sum_over_non_adjacent_free_axes() -> None:
    """The avgpool tutorial: a (P, H/2, 2, W/2, 2) view summed over axes [2, 4]."""

    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray((128, 4, 3), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, nl.sum(t, axis=[2, 4]))
        return out

    x = f32(128, 4, 2, 3, 2)
    np.testing.assert_allclose(k(x), x.sum(axis=(2, 4)), rtol=1e-5, atol=1e-5)


def test_alloc_callbacks_are_called_with_keywords() -> None:
    calls: list[tuple[str, tuple[int, ...], int, int]] = []

    def sbuf_at(*, idx, pdim_size, fdim_size):  # keyword-only: a positional call would fail
        calls.append(("sbuf", idx, pdim_size, fdim_size))
        return 0, idx[0] * fdim_size

    def psum_at(*, idx, pdim_size, fdim_size):
        calls.append(("psum", idx, pdim_size, fdim_size))
        return idx[0] % 8, 0, 0

    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
        s = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.alloc(sbuf_at))
        p = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=ncc.psum.alloc(psum_at))
        s[1] = nl.load(a)
        p[1] = nl.copy(s[1])
        nl.store(out, nl.copy(p[1]))
        return out

    x = f32(128, 64)
    np.testing.assert_array_equal(k(x), x)
    assert ("sbuf", (1,), 128, 256) in calls and ("psum", (1,), 128, 256) in calls


def test_if_on_an_optional_hbm_argument_is_a_host_side_test() -> None:
    @nki.jit(mode="simulation")
    def k(a, bias=None):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        if bias:
            t = nl.add(t, nl.load(bias))
        nl.store(out, t)
        return out

    x, b = f32(128, 32), f32(128, 32)
    np.testing.assert_array_equal(k(x), x)
    np.testing.assert_allclose(k(x, b), x + b, rtol=1e-6)


def test_if_on_an_on_chip_tile_is_still_ambiguous() -> None:
    @nki.jit(mode="simulation")
    def k(a):
        t = nl.load(a)
        if t:
            pass
        return a

    with pytest.raises(nki.NkiError, match="err_ambiguous_tensor_truth_value"):
        k(f32(128, 4))


def test_bf16_activation_bias() -> None:
    @nki.jit(mode="simulation")
    def k(a, b):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nisa.activation(op=nl.exp, data=nl.load(a), bias=nl.load(b), scale=0.5))
        return out

    x = f32(128, 32)
    bias = f32(128, 1).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(k(x, bias), np.exp(0.5 * x + bias.astype(np.float32)), rtol=1e-5)


@pytest.mark.parametrize("combine", ["and", "or"])
def test_python_and_or_of_predicates_in_mask(combine: str) -> None:
    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:64]
        nl.store(out, nl.zeros((128, 64), a.dtype, buffer=nl.sbuf))
        if combine == "and":
            m = (i_p < 100) and (i_f < 32)
        else:
            m = (i_p < 100) or (i_f < 32)
        nl.store(out[i_p, i_f], nl.load(a[i_p, i_f], mask=m), mask=m)
        return out

    x = f32(128, 64)
    rows, cols = np.arange(128)[:, None] < 100, np.arange(64)[None, :] < 32
    keep = (rows & cols) if combine == "and" else (rows | cols)
    np.testing.assert_array_equal(k(x), np.where(keep, x, 0))


def test_if_on_a_predicate_is_still_refused() -> None:
    @nki.jit(mode="simulation")
    def k(a):
        i_p = nl.arange(128)[:, None]
        if i_p < 64:
            pass
        return a

    with pytest.raises(nki.NkiError, match="err_control_flow_condition_depending_on_arange"):
        k(f32(128, 4))


def test_indexing_with_an_mgrid_result_not_unpacked() -> None:
    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        grid = nl.mgrid[0:128, 0:64]
        nl.store(out[grid], nl.load(a[grid]))
        out2 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out2[grid.p, grid.x], nl.load(a[grid.p, grid.x]))
        return out, out2

    x = f32(128, 64)
    for got in k(x):
        np.testing.assert_array_equal(got, x)


def test_psum_tiles_beyond_the_banks_are_spilled_with_a_cost() -> None:
    """Twelve live 2 KiB PSUM tiles (the banks hold eight): the values are right, the report records the
    spilled bytes, and the estimate is slower than the same kernel with eight tiles scaled to twelve."""

    def build(n):
        @nki.jit(mode="simulation")
        def k(a):
            out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
            ps = nl.ndarray((n, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
            t = nl.load(a)
            for i in nl.affine_range(n):
                ps[i, :, 0:64] = nl.copy(t)
            acc = nl.zeros((128, 64), nl.float32, buffer=nl.sbuf)
            for i in nl.affine_range(n):
                acc += ps[i, :, 0:64]
            nl.store(out, acc)
            return out
        return k

    x = f32(128, 64)
    spilled = build(12)
    np.testing.assert_allclose(spilled(x), 12 * x, rtol=1e-5, atol=1e-5)
    report = spilled.report
    assert report.psum_spill_bytes_per_partition == 4 * 2048
    assert report.peak_psum_bytes_per_partition <= 16384
    fits = build(8)
    fits(x)
    assert fits.report.psum_spill_bytes_per_partition == 0
    assert report.engine_busy_ns["vector"] > fits.report.engine_busy_ns["vector"] * 12 / 8


def test_masked_gather_past_a_tiles_end_in_bn_stats() -> None:
    """Layernorm v2 at a width that is no multiple of 512: the last bn_stats chunk indexes past the tile,
    its mask keeps the access inside."""

    @nki.jit(mode="simulation")
    def k(a):
        n = a.shape[1]
        out = nl.ndarray((128, 2), nl.float32, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        t = nl.load(a)
        chunks = (n + 511) // 512
        stats = nl.ndarray((128, 6 * chunks), dtype=nl.float32)
        i_f, i_s = nl.arange(512)[None, :], nl.arange(6)[None, :]
        for j in nl.affine_range(chunks):
            stats[i_p, j * 6 + i_s] = nisa.bn_stats(t[i_p, j * 512 + i_f], mask=(j * 512 + i_f < n), dtype=nl.float32)
        nl.store(out, nisa.bn_aggr(stats))
        return out

    x = f32(128, 1000)
    got = k(x)
    np.testing.assert_allclose(got[:, 0], x.mean(1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], x.var(1), rtol=1e-4, atol=1e-5)


@nki.jit(mode="simulation")
def _one_d_plus_one_legacy(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), 1.0))
    return out


def test_one_d_load_and_store_round_trip() -> None:
    """A 1-D HBM tensor loads as a (1, n) tile; storing that tile back into a 1-D tensor is accepted (AWS's
    published 1-D kernels do it), in both API generations."""
    import torchneuron.nki as nki_current
    import torchneuron.nki.language as nlc

    @nki_current.jit
    def one_d_plus_one(a):
        out = nlc.ndarray(a.shape, dtype=a.dtype, buffer=nlc.shared_hbm)
        nlc.store(out, value=nlc.add(nlc.load(a), 1.0))
        return out

    x = f32(128)
    np.testing.assert_allclose(_one_d_plus_one_legacy(x), x + 1, rtol=1e-6)
    np.testing.assert_allclose(one_d_plus_one(x), x + 1, rtol=1e-6)
