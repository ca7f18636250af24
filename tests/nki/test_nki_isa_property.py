"""Property: element-wise and reduction instructions equal the same math in fp32 NumPy, rounded once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from nki_test_utils import random_array

BINARY = {
    nl.add: np.add, nl.subtract: np.subtract, nl.multiply: np.multiply, nl.maximum: np.maximum,
    nl.minimum: np.minimum, nl.greater: np.greater, nl.less_equal: np.less_equal, nl.equal: np.equal,
    nl.abs_max: lambda a, b: np.maximum(np.abs(a), np.abs(b)),
}
REDUCE = {nl.add: np.sum, nl.maximum: np.max, nl.minimum: np.min, nl.multiply: np.prod}
DTYPES = [np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)]


def _tile(shape: tuple[int, ...], dtype: np.dtype, seed: int) -> np.ndarray:
    return random_array(shape, dtype, seed, low=-4, high=4)


@settings(max_examples=30)
@given(op=st.sampled_from(list(BINARY)), dt_in=st.sampled_from(DTYPES), dt_out=st.sampled_from(DTYPES),
       p=st.integers(1, 128), f=st.integers(1, 64), seed=st.integers(0, 999))
def test_tensor_tensor(op, dt_in, dt_out, p: int, f: int, seed: int) -> None:
    a, b = _tile((p, f), dt_in, seed), _tile((p, f), dt_in, seed + 1)
    b[:, :1] = a[:, :1]  # make equal/less_equal see ties

    @nki.jit
    def k(x, y):
        out = nl.ndarray((p, f), dt_out, buffer=nl.shared_hbm)
        tx = nl.ndarray((p, f), dt_in, buffer=nl.sbuf)
        ty = nl.ndarray((p, f), dt_in, buffer=nl.sbuf)
        nisa.dma_copy(dst=tx, src=x)
        nisa.dma_copy(dst=ty, src=y)
        r = nl.ndarray((p, f), dt_out, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=tx, data2=ty, op=op)
        nisa.dma_copy(dst=out, src=r)
        return out

    want = BINARY[op](a.astype(np.float32), b.astype(np.float32)).astype(np.float32).astype(dt_out)
    np.testing.assert_array_equal(nki.simulate(k)(a, b), want)


@settings(max_examples=30)
@given(op=st.sampled_from(list(REDUCE)), dt=st.sampled_from(DTYPES),
       shape=st.sampled_from([(8, 16), (128, 3, 5), (3, 2, 2, 7)]), naxes=st.integers(1, 3), negate=st.booleans(),
       seed=st.integers(0, 999))
def test_tensor_reduce(op, dt, shape, naxes: int, negate: bool, seed: int) -> None:
    naxes = min(naxes, len(shape) - 1)
    axes = tuple(range(len(shape) - naxes, len(shape)))
    x = _tile(shape, dt, seed) / np.asarray(2, dt)
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape))

    @nki.jit
    def k(a):
        out = nl.ndarray(out_shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(shape, dt, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray(out_shape, nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=r, op=op, data=t, axis=axes, negate=negate, keepdims=True)
        nisa.dma_copy(dst=out, src=r)
        return out

    want = REDUCE[op](x.astype(np.float32), axis=axes, keepdims=True).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(k)(x), -want if negate else want, rtol=1e-5, atol=1e-6)


@settings(max_examples=30)
@given(dt=st.sampled_from(DTYPES), p=st.integers(1, 128), f=st.integers(1, 64), s0=st.floats(-3, 3, width=32),
       s1=st.floats(-3, 3, width=32), vector=st.booleans(), reverse=st.booleans(), seed=st.integers(0, 999))
def test_tensor_scalar_two_ops(dt, p: int, f: int, s0: float, s1: float, vector: bool, reverse: bool,
                               seed: int) -> None:
    x = _tile((p, f), dt, seed)
    col = _tile((p, 1), np.dtype(np.float32), seed + 7)

    @nki.jit
    def k(a, c):
        out = nl.ndarray((p, f), dt, buffer=nl.shared_hbm)
        t = nl.ndarray((p, f), dt, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        v = nl.ndarray((p, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=v, src=c)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.subtract, operand0=v if vector else s0, reverse0=reverse,
                           op1=nl.multiply, operand1=s1)
        nisa.dma_copy(dst=out, src=t)
        return out

    xf = x.astype(np.float32)
    first = col if vector else np.float32(s0)
    step = (first - xf) if reverse else (xf - first)
    want = (step * np.float32(s1)).astype(np.float32).astype(dt)
    np.testing.assert_array_equal(nki.simulate(k)(x, col), want)
