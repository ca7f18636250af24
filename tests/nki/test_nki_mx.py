"""NeuronCore-v4 microscaling: `quantize_mx` and `nc_matmul_mx` against a NumPy transcription of AWS's
documented layout (groups of 8 partitions x 4 packed values, e8m0 scales on 4 partitions per quadrant)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from torchneuron import nki
import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl


@pytest.fixture(autouse=True)
def _trn3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")


def _reference_quantize(x: np.ndarray, element: np.dtype, emax: int) -> tuple[np.ndarray, np.ndarray]:
    """(dequantized values [P, F], group exponents [P/8, F/4]) of AWS's algorithm, group by group."""
    p, f = x.shape
    deq = np.zeros((p, f), np.float32)
    exps = np.zeros((p // 8, f // 4), np.int32)
    for g in range(p // 8):
        for m in range(f // 4):
            block = x[g * 8:(g + 1) * 8, m * 4:(m + 1) * 4].astype(np.float32)
            amax = np.abs(block).max()
            e = int(np.floor(np.log2(amax))) - emax + 1 if amax > 0 else -127
            exps[g, m] = e
            q = (block / np.float32(2.0 ** e)).astype(element).astype(np.float32)
            deq[g * 8:(g + 1) * 8, m * 4:(m + 1) * 4] = q * np.float32(2.0 ** e)
    return deq, exps


def _mx_kernel(x_dtype):
    @nki.jit
    def k(a, b):
        p, fa = a.shape
        _, fb = b.shape
        out = nl.ndarray((fa // 4, fb // 4), nl.float32, buffer=nl.shared_hbm)
        scales = nl.ndarray((p, fa // 4), nl.uint8, buffer=nl.shared_hbm)
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        qa = nl.ndarray((p, fa // 4), x_dtype, buffer=nl.sbuf)
        qb = nl.ndarray((p, fb // 4), x_dtype, buffer=nl.sbuf)
        sa = nl.ndarray((p, fa // 4), nl.uint8, buffer=nl.sbuf)
        sb = nl.ndarray((p, fb // 4), nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=qa, src=ta, dst_scale=sa)
        nisa.quantize_mx(dst=qb, src=tb, dst_scale=sb)
        ps = nl.ndarray((fa // 4, fb // 4), nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=ps, stationary=qa, moving=qb, stationary_scale=sa, moving_scale=sb)
        r = nl.ndarray((fa // 4, fb // 4), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=ps)
        nisa.dma_copy(dst=out, src=r)
        nisa.dma_copy(dst=scales, src=sa)
        return out, scales
    return k


@pytest.mark.parametrize("x_dtype,element,emax", [(nl.float8_e4m3fn_x4, ml_dtypes.float8_e4m3fn, 8),
                                                  (nl.float8_e5m2_x4, ml_dtypes.float8_e5m2, 15)])
@pytest.mark.parametrize("p", [32, 128])
def test_quantize_mx_then_matmul_mx_matches_the_documented_algorithm(x_dtype, element, emax, p: int) -> None:
    rng = np.random.default_rng(p)
    a = (rng.standard_normal((p, 64)) * rng.uniform(0.01, 100, (p, 1))).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((p, 256)).astype(ml_dtypes.bfloat16)
    out, scales = nki.simulate(_mx_kernel(x_dtype))(a, b)
    deq_a, exps_a = _reference_quantize(a.astype(np.float32), np.dtype(element), emax)
    deq_b, _ = _reference_quantize(b.astype(np.float32), np.dtype(element), emax)
    # contraction over partitions and the 4 packed values: [p, M, 4] x [p, N, 4]
    want = np.einsum("pmj,pnj->mn", deq_a.reshape(p, -1, 4), deq_b.reshape(p, -1, 4))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    rows = [(g // 4) * 32 + g % 4 for g in range(p // 8)]  # 4 scale partitions per quadrant
    np.testing.assert_array_equal(scales[rows].astype(np.int32) - 127, exps_a)
    # and the MX product is close to the exact one (fp8 rounding only)
    exact = np.einsum("pmj,pnj->mn", a.astype(np.float32).reshape(p, -1, 4), b.astype(np.float32).reshape(p, -1, 4))
    assert np.abs(out - exact).max() < 0.15 * np.abs(exact).max()


def test_mx_needs_neuroncore_v4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    a = np.ones((32, 16), ml_dtypes.bfloat16)
    with pytest.raises(nki.NkiError, match="NeuronCore-v4"):
        nki.simulate(_mx_kernel(nl.float8_e4m3fn_x4))(a, a)


def test_fp4_operands_are_refused_not_guessed() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((32, 4), nl.float32, buffer=nl.shared_hbm)
        q = nl.ndarray((32, 4), nl.float4_e2m1fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((4, 4), nl.uint8, buffer=nl.sbuf)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.quantize_mx(dst=q, src=t, dst_scale=s)
        return out

    with pytest.raises(nki.NkiError, match="float4_e2m1fn_x4"):
        nki.simulate(k)(np.ones((32, 16), ml_dtypes.bfloat16))


def test_matmul_mx_adds_to_a_pending_matmul_group_of_the_same_psum_tile() -> None:
    """A regular matmul's accumulation group, still deferred, counts as written: the MX matmul after it
    (accumulate=None) adds to its result instead of starting a new group over it."""
    @nki.jit
    def k(a, b, x, y):
        p, fa = a.shape
        _, fb = b.shape
        out = nl.ndarray((fa // 4, fb // 4), nl.float32, buffer=nl.shared_hbm)
        ta, tb = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf), nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        tx, ty = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf), nl.ndarray(y.shape, y.dtype, buffer=nl.sbuf)
        for dst, src in ((ta, a), (tb, b), (tx, x), (ty, y)):
            nisa.dma_copy(dst=dst, src=src)
        qa = nl.ndarray((p, fa // 4), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        qb = nl.ndarray((p, fb // 4), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        sa = nl.ndarray((p, fa // 4), nl.uint8, buffer=nl.sbuf)
        sb = nl.ndarray((p, fb // 4), nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=qa, src=ta, dst_scale=sa)
        nisa.quantize_mx(dst=qb, src=tb, dst_scale=sb)
        ps = nl.ndarray((fa // 4, fb // 4), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=tx, moving=ty)
        nisa.nc_matmul_mx(dst=ps, stationary=qa, moving=qb, stationary_scale=sa, moving_scale=sb)
        r = nl.ndarray(ps.shape, nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=ps)
        nisa.dma_copy(dst=out, src=r)
        return out

    rng = np.random.default_rng(3)
    p = 32
    a, b = (rng.standard_normal((p, n)).astype(ml_dtypes.bfloat16) for n in (64, 256))
    x, y = (rng.standard_normal((p, n)).astype(ml_dtypes.bfloat16) for n in (16, 64))
    out = nki.simulate(k)(a, b, x, y)
    deq_a, _ = _reference_quantize(a.astype(np.float32), np.dtype(ml_dtypes.float8_e4m3fn), 8)
    deq_b, _ = _reference_quantize(b.astype(np.float32), np.dtype(ml_dtypes.float8_e4m3fn), 8)
    mx = np.einsum("pmj,pnj->mn", deq_a.reshape(p, -1, 4), deq_b.reshape(p, -1, 4))
    regular = x.astype(np.float32).T @ y.astype(np.float32)
    np.testing.assert_allclose(out, regular + mx, rtol=1e-5, atol=1e-4)
