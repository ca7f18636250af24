"""APIs that take `dst=`, `mask=`, `dtype=`, accumulate flags or read-modify-write ops, each against a NumPy
reference of the documented semantics (the sweep for silent wrong results of issue 32), both generations."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.legacy as lnki
import torchneuron.nki.legacy.isa as lisa
import torchneuron.nki.legacy.language as lnl
from torchneuron import nki
import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(35)
f32 = standard_normal_f32(RNG)
ROWS = np.arange(128)[:, None] < 100
COLS = np.arange(64)[None, :] < 40


@lnki.jit(mode="simulation")
def _dma_rmw_masked(a, out):
    i_p, i_f = lnl.mgrid[0:128, 0:64]
    lisa.dma_copy(dst=out[i_p, i_f], src=lnl.load(a), mask=(i_p < 100), dst_rmw_op=np.add)


@lnki.jit(mode="simulation")
def _atomic_rmw_masked(a, out):
    i_p, i_f = lnl.mgrid[0:128, 0:64]
    lnl.atomic_rmw(out[i_p, i_f], value=lnl.load(a), op=np.add, mask=(i_f < 40))


@pytest.mark.parametrize("kernel,keep", [(_dma_rmw_masked, ROWS), (_atomic_rmw_masked, COLS)])
def test_read_modify_write_into_hbm_under_mask(kernel, keep) -> None:
    x = f32(128, 64)
    out = np.ones((128, 64), np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, np.where(keep, 1 + x, 1), rtol=1e-6)


def test_legacy_copy_predicated_under_mask_and_reverse() -> None:
    @lnki.jit(mode="simulation")
    def k(a, b):
        out = lnl.ndarray(a.shape, lnl.float32, buffer=lnl.shared_hbm)
        out2 = lnl.ndarray(a.shape, lnl.float32, buffer=lnl.shared_hbm)
        i_p, i_f = lnl.mgrid[0:128, 0:64]
        ta, tb, tc = lnl.load(a), lnl.load(b), lnl.load(b)
        lisa.tensor_copy_predicated(src=ta, dst=tb, predicate=lnl.greater(ta, 0.0), mask=(i_p < 100))
        lisa.tensor_copy_predicated(src=ta, dst=tc, predicate=lnl.greater(ta, 0.0), reverse_pred=True)
        lnl.store(out, tb)
        lnl.store(out2, tc)
        return out, out2

    x, y = f32(128, 64), f32(128, 64)
    got, got_reverse = k(x, y)
    np.testing.assert_array_equal(got, np.where(ROWS & (x > 0), x, y))
    np.testing.assert_array_equal(got_reverse, np.where(x > 0, y, x))


def test_legacy_masked_result_assigned_then_accumulated() -> None:
    @lnki.jit(mode="simulation")
    def k(a):
        out = lnl.ndarray((128, 64), lnl.float32, buffer=lnl.shared_hbm)
        i_p, i_f = lnl.mgrid[0:128, 0:64]
        acc = lnl.full((128, 64), 7.0, lnl.float32, buffer=lnl.sbuf)
        acc[i_p, i_f] = lnl.exp(lnl.load(a), mask=(i_f < 40))
        acc[i_p, i_f] += lnl.load(a)
        lnl.store(out, acc)
        return out

    x = f32(128, 64)
    np.testing.assert_allclose(k(x), np.where(COLS, np.exp(x), 7.0) + x, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(p=st.integers(1, 128), f=st.integers(1, 64), cut=st.integers(0, 64),
       out_dt=st.sampled_from(["float32", "bfloat16"]), seed=st.integers(0, 2**16))
def test_legacy_reductions_with_mask_and_dtype(p: int, f: int, cut: int, out_dt: str, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((p, f)).astype(np.float32)

    @lnki.jit(mode="simulation")
    def k(a):
        out = lnl.ndarray((a.shape[0], 3), lnl.float32, buffer=lnl.shared_hbm)
        i_p, i_f = lnl.mgrid[0:a.shape[0], 0:a.shape[1]]
        t = lnl.load(a)
        res = lnl.ndarray((a.shape[0], 3), lnl.float32, buffer=lnl.sbuf)
        res[:, 0:1] = lnl.sum(t, axis=1, keepdims=True, mask=(i_f < cut), dtype=getattr(lnl, out_dt))
        res[:, 1:2] = lisa.tensor_reduce(np.max, t, axis=[1], keepdims=True, negate=True)
        res[:, 2:3] = lnl.mean(t, axis=1, keepdims=True)
        lnl.store(out, res)
        return out

    got = k(x)
    want_sum = x[:, :cut].sum(1)
    if out_dt == "bfloat16":
        want_sum = want_sum.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(got[:, 0], want_sum, rtol=1e-2 if out_dt == "bfloat16" else 1e-5, atol=1e-4)
    np.testing.assert_array_equal(got[:, 1], -x.max(1))
    np.testing.assert_allclose(got[:, 2], x.mean(1), rtol=1e-5, atol=1e-6)


def test_current_matmul_accumulate_flags_and_groups() -> None:
    """accumulate=None: the first matmul into a location never written overwrites, later ones add, also
    after the tile was read; True adds, False overwrites."""

    @nki.jit
    def k(a, b):
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        ps = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
        out = nl.ndarray((64, 256), nl.float32, buffer=nl.shared_hbm)
        for i, flags in enumerate([(None, None), (None,), (True,), (False,)]):
            for acc in flags:
                nisa.nc_matmul(dst=ps, stationary=ta, moving=tb, accumulate=acc)
            r = nl.ndarray((64, 64), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=r, src=ps)
            nisa.dma_copy(dst=out[:, i * 64:(i + 1) * 64], src=r)
        return out

    x, y = f32(128, 64), f32(128, 64)
    m = x.T @ y
    np.testing.assert_allclose(nki.simulate(k)(x, y), np.concatenate([2 * m, 3 * m, 4 * m, m], 1), rtol=1e-4,
                               atol=1e-3)


def test_a_psum_read_between_k_tiles_sees_the_running_sum() -> None:
    """AWS's nki-samples batch_invariance/inspect_psum.py copies the PSUM accumulator out after every K tile
    and, on AWS's nki.simulate, sees the running sum (its EXPLAINER records the full sum at the end): reading
    does not end the accumulation group. A tile allocated again (the next output tile) starts a new one."""

    @nki.jit
    def k(a, b, k_tile):
        kk, mm = a.shape
        n = b.shape[1]
        tiles = kk // k_tile
        snaps = nl.ndarray((tiles, mm, n), nl.float32, buffer=nl.shared_hbm)
        again = nl.ndarray((2, mm, n), nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((mm, n), nl.float32, buffer=nl.psum)
        for t in nl.static_range(tiles):
            ta = nl.ndarray((k_tile, mm), a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((k_tile, n), b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta, src=a[t * k_tile:(t + 1) * k_tile, :])
            nisa.dma_copy(dst=tb, src=b[t * k_tile:(t + 1) * k_tile, :])
            nisa.nc_matmul(dst=acc, stationary=ta, moving=tb)
            snap = nl.ndarray((mm, n), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=snap, src=acc)
            nisa.dma_copy(dst=snaps[t], src=snap)
        for r in nl.static_range(2):  # a fresh allocation per output tile: each starts its own group
            ta = nl.ndarray((k_tile, mm), a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((k_tile, n), b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta, src=a[0:k_tile, :])
            nisa.dma_copy(dst=tb, src=b[0:k_tile, :])
            fresh = nl.ndarray((mm, n), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=fresh, stationary=ta, moving=tb)
            out = nl.ndarray((mm, n), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=fresh)
            nisa.dma_copy(dst=again[r], src=out)
        return snaps, again

    a, b = f32(512, 128), f32(512, 64)
    snaps, again = nki.simulate(k)(a, b, 128)
    for t in range(4):
        np.testing.assert_allclose(snaps[t], a[:128 * (t + 1)].T @ b[:128 * (t + 1)], rtol=1e-4, atol=1e-3)
    for r in range(2):
        np.testing.assert_allclose(again[r], a[:128].T @ b[:128], rtol=1e-4, atol=1e-3)


def test_current_dst_views_and_reverse_operands() -> None:
    @nki.jit
    def k(a, b):
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        v = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=v, src=tb[:, 0:1])
        r = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r, data=ta, op0=nl.subtract, operand0=v, op1=nl.multiply, operand1=tb,
                                  reverse0=True)
        nisa.tensor_tensor(dst=ta[:, 0:32], data1=ta[:, 0:32], data2=tb[:, 32:64], op=nl.add)
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[:, 0:64], src=r)
        nisa.dma_copy(dst=out[:, 64:128], src=ta)
        return out

    x, y = f32(128, 64), f32(128, 64)
    got = nki.simulate(k)(x, y)
    np.testing.assert_allclose(got[:, :64], (y[:, 0:1] - x) * y, rtol=1e-5, atol=1e-5)
    want = x.copy()
    want[:, :32] += y[:, 32:]
    np.testing.assert_allclose(got[:, 64:], want, rtol=1e-6)


def test_current_activation_reduce_registers_span_instructions() -> None:
    @nki.jit
    def k(a):
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        r = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        rr = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=r[:, 0:32], op=nl.exp, data=ta[:, 0:32], reduce_op=nl.add,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(dst=r[:, 32:64], op=nl.exp, data=ta[:, 32:64], reduce_op=nl.add, reduce_res=rr,
                        reduce_cmd=nisa.reduce_cmd.reduce)
        out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=rr)
        return out

    x = f32(128, 64) * 0.1
    np.testing.assert_allclose(nki.simulate(k)(x), np.exp(x).sum(1, keepdims=True), rtol=1e-5)
