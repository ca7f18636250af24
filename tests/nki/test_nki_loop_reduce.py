"""Legacy `nl.loop_reduce`: the destination is the right-hand input of `op` across the named loop's iterations
(AWS's documentation), in each form published kernels use, against NumPy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(32)
f32 = standard_normal_f32(RNG)


def test_loop_reduce_bound_to_a_name_accumulates_the_documented_form() -> None:
    """`b = nl.zeros(...); for k: b = nl.loop_reduce(a_k, op=np.add, loop_indices=[k], dtype=nl.float32)`."""

    @nki.jit(mode="simulation")
    def k(x):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        b = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        for k_i in nl.affine_range(x.shape[0]):
            a = nl.load(x[k_i])
            b = nl.loop_reduce(a, op=np.add, loop_indices=[k_i], dtype=nl.float32)
        nl.store(out, b)
        return out

    x = f32(4, 128, 64)
    np.testing.assert_allclose(k(x), x.sum(axis=0), rtol=1e-6, atol=1e-5)


def test_loop_reduce_max_starts_from_the_destination_value() -> None:
    """With np.maximum the destination's initial value takes part (zeros clip negatives)."""

    @nki.jit(mode="simulation")
    def k(x):
        out = nl.ndarray((128, 32), nl.float32, buffer=nl.shared_hbm)
        b = nl.zeros((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        for k_i in nl.affine_range(x.shape[0]):
            b = nl.loop_reduce(nl.load(x[k_i]), op=np.maximum, loop_indices=[k_i])
        nl.store(out, b)
        return out

    x = f32(3, 128, 32)
    np.testing.assert_array_equal(k(x), np.maximum(x.max(axis=0), 0))


def test_loop_reduce_into_a_view_accumulates_psum_blocks_with_dtype() -> None:
    """The matmul tutorial's form: `acc[m, :, n] = nl.loop_reduce(psum, np.add, [k2], dtype=bf16)` over K blocks."""

    @nki.jit(mode="simulation")
    def k(lhsT, rhs):
        kb = lhsT.shape[0] // 128
        out = nl.ndarray((128, 256), nl.bfloat16, buffer=nl.shared_hbm)
        acc = nl.zeros((2, nl.par_dim(128), 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        for k2 in nl.affine_range(kb):
            lt = nl.load(lhsT[k2 * 128:(k2 + 1) * 128, :])
            for n in nl.affine_range(2):
                r = nl.load(rhs[k2 * 128:(k2 + 1) * 128, n * 128:(n + 1) * 128])
                ps = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
                ps += nisa.nc_matmul(lt, r)
                acc[n, :, :] = nl.loop_reduce(ps, op=np.add, loop_indices=[k2], dtype=nl.bfloat16)
        for n in nl.affine_range(2):
            nl.store(out[:, n * 128:(n + 1) * 128], acc[n])
        return out

    lhsT = f32(384, 128).astype(ml_dtypes.bfloat16)
    rhs = f32(384, 256).astype(ml_dtypes.bfloat16)
    # reference: per-block fp32 products, each block added into a bf16 accumulator (one rounding per add)
    acc = np.zeros((128, 256), ml_dtypes.bfloat16)
    for b in range(3):
        blk = lhsT[b * 128:(b + 1) * 128].astype(np.float32).T @ rhs[b * 128:(b + 1) * 128].astype(np.float32)
        acc = (acc.astype(np.float32) + blk).astype(ml_dtypes.bfloat16)
    got = k(lhsT, rhs)
    np.testing.assert_allclose(got.astype(np.float32), acc.astype(np.float32), rtol=1e-2, atol=1e-2)
    full = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    # the last block alone (what the old simulator returned) is far from the full product
    assert np.abs(got.astype(np.float32) - full).max() < 0.1 * np.abs(full).max()


def test_loop_reduce_under_mask_leaves_masked_off_rows_alone() -> None:
    """The flash-attention backward form: `acc[i_p, i_f] = nl.loop_reduce(x, np.add, (k,), dtype=, mask=row < n)`."""

    @nki.jit(mode="simulation")
    def k(x, valid):
        out = nl.ndarray((128, 16), nl.float32, buffer=nl.shared_hbm)
        acc = nl.full((128, 16), 5.0, dtype=nl.float32, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:128, 0:16]
        for q in nl.affine_range(x.shape[0]):
            t = nl.load(x[q])
            acc[i_p, i_f] = nl.loop_reduce(t, op=np.add, loop_indices=(q,), dtype=nl.float32, mask=(i_p < valid))
        nl.store(out, acc)
        return out

    x = f32(3, 128, 16)
    ref = np.full((128, 16), 5.0, np.float32)
    ref[:100] += x[:, :100].sum(axis=0)
    for _ in range(2):  # the second launch repeats a checked signature (no re-validation): same values
        np.testing.assert_allclose(k(x, 100), ref, rtol=1e-6, atol=1e-5)


def test_loop_reduce_first_binding_of_a_name_is_the_tile() -> None:
    @nki.jit(mode="simulation")
    def k(x):
        out = nl.ndarray((128, 8), nl.float32, buffer=nl.shared_hbm)
        a = nl.load(x)
        fresh = nl.loop_reduce(a, op=np.add, loop_indices=[0])
        nl.store(out, fresh)
        return out

    x = f32(128, 8)
    np.testing.assert_array_equal(k(x), x)


def test_loop_reduce_refuses_a_destination_of_another_shape() -> None:
    @nki.jit(mode="simulation")
    def k(x):
        out = nl.ndarray((128, 8), nl.float32, buffer=nl.shared_hbm)
        b = nl.zeros((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.loop_reduce(nl.load(x), op=np.add, loop_indices=[0])
        nl.store(out, b)
        return out

    with pytest.raises(nki.NkiError, match="destination `b` has shape"):
        k(f32(128, 8))


def test_causal_bool_masks_skip_instructions_in_the_flash_backward_pattern() -> None:
    """Flash-attention backward's causal blocks: `nc_transpose(..., mask=q >= k)`, `nc_matmul(..., mask=...)`
    and `acc[...] = nl.loop_reduce(psum, np.add, (q,), mask=rows & causal)` with a Python bool per block: a
    block whose mask is False changes nothing (its unwritten result does not reach the sum)."""

    @nki.jit(mode="simulation")
    def k(dy, s):
        nq = dy.shape[0]
        out = nl.ndarray((nq, 64, 128), nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((nq, nl.par_dim(64), 128), nl.float32, buffer=nl.sbuf)
        ip, jf = nl.arange(64)[:, None], nl.arange(128)[None, :]
        for q in nl.affine_range(nq):
            dyq, sq = nl.load(dy[q]), nl.load(s[q])
            for kk in nl.affine_range(nq):
                causal = q >= kk
                dy_t = nisa.nc_transpose(dyq, mask=causal)          # (128, 64) -> (64, 128)
                ps = nisa.nc_matmul(dy_t, sq, mask=causal)          # K = 64 rows: dy[q] @ s[q], (128, 128)
                acc[kk, ip, jf] = nl.loop_reduce(ps[ip, jf], op=np.add, loop_indices=(q,), dtype=nl.float32,
                                                 mask=(ip < 48) & causal)
        for kk in nl.affine_range(nq):
            nl.store(out[kk], acc[kk])
        return out

    nq = 3
    dy, s = f32(nq, 128, 64), f32(nq, 64, 128)
    got = k(dy, s)
    want = np.zeros((nq, 64, 128), np.float32)
    for q in range(nq):
        for kk in range(q + 1):  # causal blocks only
            want[kk, :48] += (dy[q] @ s[q])[:48]  # stationary dy[q].T: (dy[q].T).T @ s[q]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("masks", [(True, False), (False, True), (False, False)])
def test_psum_accumulation_skips_a_matmul_whose_mask_is_false(masks) -> None:
    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray((64, 64), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        ps = nl.zeros((64, 64), nl.float32, buffer=nl.psum)
        for m in masks:
            ps += nisa.nc_matmul(t, t, mask=m)
        nl.store(out, nl.copy(ps))
        return out

    x = f32(128, 64)
    np.testing.assert_allclose(k(x), sum(masks) * (x.T @ x), rtol=1e-4, atol=1e-3)
