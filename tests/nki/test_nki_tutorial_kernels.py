"""Kernels in the style of the public NKI tutorials (legacy API), run unmodified: the idioms real code uses
(mgrid loads, `tile[...] = nl.load(...)`, `psum += nl.matmul(...)`, masked tails, partition broadcasts)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.language as nl


@nki.jit
def nki_matmul_basic_(lhsT, rhs):
    result = nl.ndarray((64, 512), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    i_lhsT_p, i_lhsT_f = nl.mgrid[0:128, 0:64]
    i_rhs_p, i_rhs_f = nl.mgrid[0:128, 0:512]
    i_out_p, i_out_f = nl.mgrid[0:64, 0:512]
    lhs_tile = nl.load(lhsT[i_lhsT_p, i_lhsT_f])
    rhs_tile = nl.load(rhs[i_rhs_p, i_rhs_f])
    result_psum = nl.matmul(lhs_tile, rhs_tile, transpose_x=True)
    result_sbuf = nl.copy(result_psum, dtype=result.dtype)
    nl.store(result[i_out_p, i_out_f], value=result_sbuf)
    return result


@nki.jit
def nki_matmul_tiled_(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                res_psum += nl.matmul(lhsT_tile[...], rhs_tile[...], transpose_x=True)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
    return result


@nki.jit
def nki_layernorm_kernel(input_tensor, epsilon, gamma_vector, beta_vector):
    output_tensor = nl.ndarray(input_tensor.shape, dtype=input_tensor.dtype, buffer=nl.shared_hbm)
    num_rows, hidden_size = input_tensor.shape
    i_p_io = nl.arange(128)[:, None]
    i_f_io = nl.arange(hidden_size)[None, :]
    i_p_param = nl.arange(1)[:, None]
    gamma = nl.load(gamma_vector.reshape((1, hidden_size))[i_p_param, i_f_io])
    beta = nl.load(beta_vector.reshape((1, hidden_size))[i_p_param, i_f_io])
    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + i_p_io
        input_sb = nl.load(input_tensor[rows, i_f_io], mask=(rows < num_rows))
        mean = nl.mean(input_sb, axis=[1], mask=(rows < num_rows))
        shifted = nl.subtract(input_sb, mean, mask=(rows < num_rows))
        var = nl.mean(nl.square(shifted, mask=(rows < num_rows)), axis=[1], mask=(rows < num_rows))
        rstd = nl.rsqrt(var + epsilon, mask=(rows < num_rows))
        normalized = nl.multiply(shifted, rstd, mask=(rows < num_rows))
        normalized = nl.multiply(normalized, gamma.broadcast_to((128, hidden_size)), mask=(rows < num_rows))
        normalized = nl.add(normalized, beta.broadcast_to((128, hidden_size)), mask=(rows < num_rows))
        nl.store(output_tensor[rows, i_f_io], value=normalized, mask=(rows < num_rows))
    return output_tensor


def test_matmul_basic() -> None:
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((128, 64), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((128, 512), dtype=np.float32).astype(ml_dtypes.bfloat16)
    got = nki.simulate_kernel(nki_matmul_basic_, lhsT, rhs)
    want = (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2 ** -7, atol=1e-2)


def test_matmul_tiled() -> None:
    rng = np.random.default_rng(1)
    lhsT = rng.standard_normal((256, 256), dtype=np.float32)
    rhs = rng.standard_normal((256, 1024), dtype=np.float32)
    np.testing.assert_allclose(nki_matmul_tiled_(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


def test_layernorm_with_masked_tail() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300, 96), dtype=np.float32)
    g, b = rng.standard_normal(96, dtype=np.float32), rng.standard_normal(96, dtype=np.float32)
    got = nki_layernorm_kernel(x, 1e-5, g, b)
    mean, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5) * g + b, rtol=1e-4, atol=1e-4)
