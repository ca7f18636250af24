"""The nki_ops kernels against their NumPy references, over drawn shapes and both bf16 and fp32."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nki_ops import add, attention, layernorm, matmul, rmsnorm, softmax, transpose
from torchneuron import nki

from nki_test_utils import random_array

DTYPES = st.sampled_from([np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)])


def _close(got: np.ndarray, ref: np.ndarray, dtype: np.dtype, scale: float = 1.0) -> None:
    assert got.shape == ref.shape and got.dtype == ref.dtype
    # one output rounding (bf16: 2^-8 relative) plus fp32 accumulation-order differences
    rtol = (2.0 ** -7 if dtype == ml_dtypes.bfloat16 else 1e-5) * scale
    g, r = got.astype(np.float32), ref.astype(np.float32)
    np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol * max(1.0, float(np.abs(r).max())))


@given(rows=st.integers(1, 300), cols=st.integers(1, 700), dtype=DTYPES, seed=st.integers(0, 2**16))
def test_add(rows: int, cols: int, dtype: np.dtype, seed: int) -> None:
    a, b = random_array((rows, cols), dtype, seed), random_array((rows, cols), dtype, seed + 1)
    got = nki.simulate(add.tensor_add_kernel)(a, b)
    np.testing.assert_array_equal(got, add.reference(a, b))  # one fp32 add, one rounding: bit-exact


@given(k=st.integers(1, 300), m=st.integers(1, 260), n=st.integers(1, 600), dtype=DTYPES, seed=st.integers(0, 99))
def test_matmul(k: int, m: int, n: int, dtype: np.dtype, seed: int) -> None:
    lhsT, rhs = random_array((k, m), dtype, seed), random_array((k, n), dtype, seed + 1)
    got = nki.simulate(matmul.matmul_kernel)(lhsT, rhs)
    _close(got, matmul.reference(lhsT, rhs), dtype, scale=4.0)


@given(rows=st.integers(1, 300), cols=st.integers(1, 300), dtype=DTYPES, seed=st.integers(0, 99))
def test_transpose(rows: int, cols: int, dtype: np.dtype, seed: int) -> None:
    x = random_array((rows, cols), dtype, seed)
    np.testing.assert_array_equal(nki.simulate(transpose.transpose_kernel)(x), transpose.reference(x))


@given(rows=st.integers(1, 260), cols=st.integers(1, 1000), dtype=DTYPES, seed=st.integers(0, 99))
def test_softmax(rows: int, cols: int, dtype: np.dtype, seed: int) -> None:
    x = random_array((rows, cols), dtype, seed) * np.asarray(3, dtype=dtype)
    got = nki.simulate(softmax.softmax_kernel)(x)
    _close(got, softmax.reference(x), dtype, scale=2.0)
    np.testing.assert_allclose(got.astype(np.float32).sum(axis=1), 1.0, rtol=0.02 if dtype != np.float32 else 1e-5)


@given(rows=st.integers(1, 260), cols=st.integers(1, 1000), dtype=DTYPES, seed=st.integers(0, 99))
def test_rmsnorm(rows: int, cols: int, dtype: np.dtype, seed: int) -> None:
    x, w = random_array((rows, cols), dtype, seed), random_array((cols,), dtype, seed + 1)
    _close(nki.simulate(rmsnorm.rmsnorm_kernel)(x, w), rmsnorm.reference(x, w), dtype, scale=2.0)


@given(rows=st.integers(1, 260), cols=st.integers(2, 1200), dtype=DTYPES, seed=st.integers(0, 99))
def test_layernorm(rows: int, cols: int, dtype: np.dtype, seed: int) -> None:
    x = random_array((rows, cols), dtype, seed) + np.asarray(2, dtype=dtype)
    g, b = random_array((cols,), dtype, seed + 1), random_array((cols,), dtype, seed + 2)
    _close(nki.simulate(layernorm.layernorm_kernel)(x, g, b), layernorm.reference(x, g, b), dtype, scale=4.0)


@given(heads=st.integers(1, 2), tiles=st.integers(1, 3), d=st.sampled_from([16, 64, 128]), dtype=DTYPES,
       seed=st.integers(0, 99))
def test_causal_attention(heads: int, tiles: int, d: int, dtype: np.dtype, seed: int) -> None:
    q, k, v = (random_array((heads, 128 * tiles, d), dtype, seed + i) for i in range(3))
    got = nki.simulate(attention.causal_attention_kernel)(q, k, v)
    # bf16 probabilities feed the PV matmul (as on hardware), so bf16 gets a looser bound
    _close(got, attention.reference(q, k, v), dtype, scale=4.0 if dtype != np.float32 else 10.0)


def test_kernel_modules_import_without_the_device() -> None:
    import importlib

    for name in ("add", "matmul", "transpose", "softmax", "rmsnorm", "layernorm", "attention"):
        mod = importlib.import_module(f"nki_ops.{name}")
        assert callable(mod.reference)
        kernels = [v for v in vars(mod).values() if isinstance(v, nki.Kernel)]
        assert kernels, f"nki_ops.{name} should define its kernels"
