"""Numerics as on the hardware: fp32 arithmetic with one rounding on write, PSUM accumulation groups,
uninitialised-memory sentinels, saturating round-to-nearest-even integer casts, ml_dtypes storage."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
import torchneuron.nki.legacy as lnki
import torchneuron.nki.legacy.language as lnl
from torchneuron import nki

BF16 = ml_dtypes.bfloat16


def test_two_ops_round_once_in_bf16() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0, op1=nl.subtract, operand1=3.0)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.array([[1.0 + 2.0 ** -7]], dtype=BF16)  # x*3 is not representable in bf16
    got = k(x).astype(np.float32)
    fused = np.float32(x.astype(np.float32) * 3 - 3).astype(BF16).astype(np.float32)
    per_op = (x * np.asarray(3, BF16) - np.asarray(3, BF16)).astype(np.float32)
    assert fused != per_op  # the example really distinguishes the two
    np.testing.assert_array_equal(got, fused)


def test_psum_accumulation_groups() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 128, 64), nl.float32, buffer=nl.shared_hbm)
        s = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=a[:, 0:128])
        m = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=m, src=a[:, 0:64])
        acc = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)  # uninitialised: NaN
        res = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # first write of the group overwrites the NaN
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # later writes add
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[0], src=res)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # reading does not end the group: adds
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[1], src=res)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m, accumulate=True)  # explicit accumulate adds
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[2], src=res)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m, accumulate=False)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[3], src=res)
        return out

    a = np.random.default_rng(1).standard_normal((128, 128), dtype=np.float32)
    got = k(a)
    p = a.T @ a[:, 0:64]
    np.testing.assert_allclose(got[0], 2 * p, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[1], 3 * p, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[2], 4 * p, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[3], p, rtol=1e-5, atol=1e-4)


def test_matmul_operands_snapshot_at_issue() -> None:
    """A tile overwritten after the matmul that read it must not change the accumulated result."""
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        s = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        acc = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
        for i in range(3):
            nisa.dma_copy(dst=s, src=a[i])
            nisa.nc_matmul(dst=acc, stationary=s, moving=s)
        res = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out, src=res)
        return out

    a = np.random.default_rng(2).standard_normal((3, 128, 128), dtype=np.float32)
    np.testing.assert_allclose(k(a), sum(m.T @ m for m in a), rtol=1e-4, atol=1e-3)


def test_uninitialised_sentinels() -> None:
    @nki.jit
    def k(x):
        f = nl.ndarray((2, 3), nl.float32, buffer=nl.shared_hbm)
        i = nl.ndarray((2, 3), nl.int32, buffer=nl.shared_hbm)
        tf = nl.ndarray((2, 3), nl.bfloat16, buffer=nl.sbuf)
        ti = nl.ndarray((2, 3), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=f, src=tf)
        nisa.dma_copy(dst=i, src=ti)
        return f, i

    f, i = k(np.zeros((1, 1), np.float32))
    assert np.isnan(f).all()
    assert (i == 4).all()


def test_int_casts_round_half_even_and_saturate() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, nl.int8, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray(x.shape, nl.int8, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=t)
        nisa.dma_copy(dst=out, src=r)
        return out

    x = np.array([[0.5, 1.5, 2.5, -2.5, 127.4, 300.0, -1e9, np.nan]], np.float32)
    np.testing.assert_array_equal(k(x), [[0, 2, 2, -2, 127, 127, -128, 0]])


def test_fp8_storage() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, nl.float8_e4m3fn, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float8_e4m3fn, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.array([[0.3, 17.0, 400.0]], np.float32)
    got = k(x)
    assert got.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.float8_e4m3fn))


@pytest.mark.parametrize(("a", "b", "want"), [
    (np.float16, BF16, np.float32), (np.int8, np.uint8, np.int16), (ml_dtypes.float8_e4m3, ml_dtypes.float8_e5m2, BF16),
    (np.int32, np.uint32, np.float32), (BF16, np.float32, np.float32),
])
def test_legacy_promotion(a, b, want) -> None:
    @lnki.jit
    def k(x, y):
        r = lnl.add(lnl.load(x), lnl.load(y))
        out = lnl.ndarray(r.shape, r.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, r)
        return out

    assert k(np.ones((2, 2), a), np.ones((2, 2), b)).dtype == np.dtype(want)


def test_python_scalars_are_not_weak() -> None:
    @lnki.jit
    def k(x):
        r = lnl.load(x) + 1.5  # fp16 tile + Python float -> fp32 (documented legacy rule)
        out = lnl.ndarray(r.shape, r.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, r)
        return out

    assert k(np.ones((2, 2), np.float16)).dtype == np.float32


def test_device_print_current(capsys: pytest.CaptureFixture[str]) -> None:
    @nki.jit
    def k(x):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nl.device_print("x:", t)

    nki.simulate(k)(np.full((1, 3), 2.5, np.float32))
    assert "x: [[2.5 2.5 2.5]]" in capsys.readouterr().out


def test_activation_functions_match_numpy() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((6,) + x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        for i, op in enumerate((nl.exp, nl.tanh, nl.sigmoid, nl.gelu, nl.silu, nl.erf)):
            r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=r, op=op, data=t)
            nisa.dma_copy(dst=out[i], src=r)
        return out

    import math
    x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32)
    got = k(x)
    erf = np.vectorize(math.erf)(x.astype(np.float64))
    refs = [np.exp(x), np.tanh(x), 1 / (1 + np.exp(-x)), 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))),
            x / (1 + np.exp(-x)), erf]
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
