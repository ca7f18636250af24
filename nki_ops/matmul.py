"""Tiled matmul with PSUM accumulation, written in NKI (current API).

`matmul_kernel(lhsT, rhs)`: out[M, N] = lhsT[K, M].T @ rhs[K, N]. The contraction K runs on the 128
partitions; each output tile [128, 512] accumulates its K/128 partial products in one PSUM bank (the first
matmul of the group overwrites, later ones add). A block of `rhs` columns is loaded into SBUF once and reused
for every row tile of the output, so HBM traffic is one pass over each input, and the Tensor engine, not DMA,
bounds it. lhsT is loaded LHS_BLOCK columns at a time (1 KiB per partition in bf16): 128-column loads would
be 256-byte DMA descriptors, which spend most of the DMA time on per-descriptor overhead.

`gemm_kernel(a, b, bias, transpose_a, transpose_b, activation, save_pre)`: act(op(a) @ op(b) + bias), the
general form the linear layers use. An operand whose contraction dim is its last one ([M, K] for a, [N, K]
for b) is loaded by rows and turned on the Tensor engine (128x128 PE transposes). `linear_bwd_kernel` gives
dx, dw and db of `y = x @ w.T + b` in one launch.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from ._tiles import ColumnSums, load_rows, row_tiles, transpose_into

TILE_K = 128   # partitions: the contraction per matmul instruction
TILE_M = 128   # stationary free size
TILE_N = 512   # moving free size: one PSUM bank of fp32
RHS_BLOCK_BYTES = 96 * 1024  # SBUF per partition given to the resident rhs block
LHS_BLOCK = 4 * TILE_M       # lhsT columns per load

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


def _act_op(activation):
    return {"relu": nl.relu, "gelu": nl.gelu, "gelu_tanh": nl.gelu_apprx_tanh, "silu": nl.silu}.get(activation)


def _load_lhs(lhsT, m0, mm, k_tiles):
    K = lhsT.shape[0]
    lhs_sb = nl.ndarray((TILE_K, k_tiles, mm), lhsT.dtype, buffer=nl.sbuf)
    for kt in range(k_tiles):
        kk = min(TILE_K, K - kt * TILE_K)
        nisa.dma_copy(dst=lhs_sb[0:kk, kt, :], src=lhsT[kt * TILE_K:kt * TILE_K + kk, m0:m0 + mm])
    return lhs_sb


def _accumulate(lhs, rhs, K, j0, mm, nn):
    """PSUM [mm, nn] = sum over the K tiles of lhs[:, kt, :].T @ rhs[:, kt, j0:j0+nn] (one accumulation group)."""
    acc = nl.ndarray((mm, nn), nl.float32, buffer=nl.psum)
    for kt in range((K + TILE_K - 1) // TILE_K):
        kk = min(TILE_K, K - kt * TILE_K)
        nisa.nc_matmul(dst=acc, stationary=lhs[0:kk, kt, :], moving=rhs[0:kk, kt, j0:j0 + nn])
    return acc


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, f"contraction sizes differ: lhsT has K={K}, rhs has K={K2}"
    out = nl.ndarray((M, N), lhsT.dtype, buffer=nl.shared_hbm)
    k_tiles = (K + TILE_K - 1) // TILE_K
    itemsize = 4 if rhs.dtype == nl.float32 else 2
    block_n = max(TILE_N, (RHS_BLOCK_BYTES // (k_tiles * itemsize)) // TILE_N * TILE_N)
    for n0 in range(0, N, block_n):
        nb = min(block_n, N - n0)
        rhs_sb = nl.ndarray((TILE_K, k_tiles, nb), rhs.dtype, buffer=nl.sbuf)
        for kt in range(k_tiles):
            kk = min(TILE_K, K - kt * TILE_K)
            nisa.dma_copy(dst=rhs_sb[0:kk, kt, :], src=rhs[kt * TILE_K:kt * TILE_K + kk, n0:n0 + nb])
        # double-buffer the stationary blocks: block b+1 is requested before block b's results are stored,
        # so the in-order DMA queues never hold the next load behind a store that waits on the matmuls
        lhs_next = _load_lhs(lhsT, 0, min(LHS_BLOCK, M), k_tiles)
        for b0 in range(0, M, LHS_BLOCK):
            lhs_sb = lhs_next
            if b0 + LHS_BLOCK < M:
                lhs_next = _load_lhs(lhsT, b0 + LHS_BLOCK, min(LHS_BLOCK, M - b0 - LHS_BLOCK), k_tiles)
            for m0 in range(b0, min(b0 + LHS_BLOCK, M), TILE_M):
                mm = min(TILE_M, M - m0)
                res_sb = nl.ndarray((mm, nb), lhsT.dtype, buffer=nl.sbuf)
                for j0 in range(0, nb, TILE_N):
                    nn = min(TILE_N, nb - j0)
                    acc = nl.ndarray((mm, nn), nl.float32, buffer=nl.psum)
                    for kt in range(k_tiles):
                        kk = min(TILE_K, K - kt * TILE_K)
                        nisa.nc_matmul(dst=acc, stationary=lhs_sb[0:kk, kt, m0 - b0:m0 - b0 + mm],
                                       moving=rhs_sb[0:kk, kt, j0:j0 + nn])
                    nisa.tensor_copy(dst=res_sb[:, j0:j0 + nn], src=acc)
                nisa.dma_copy(dst=out[m0:m0 + mm, n0:n0 + nb], src=res_sb)
    return out


# ---- the general form: op(a) @ op(b) (+ bias, activation) ----

def _stationary(a, m0, mm, K, transpose_a):
    """Rows m0..m0+mm of op(a) as SBUF [128 (k), k_tiles, mm], the contraction on partitions."""
    k_tiles = (K + TILE_K - 1) // TILE_K
    blk = nl.ndarray((TILE_K, k_tiles, mm), a.dtype, buffer=nl.sbuf)
    if transpose_a:  # a is [K, M]: already contraction-major
        for kt in range(k_tiles):
            kk = min(TILE_K, K - kt * TILE_K)
            nisa.dma_copy(dst=blk[0:kk, kt, :], src=a[kt * TILE_K:kt * TILE_K + kk, m0:m0 + mm])
        return blk
    rows = nl.ndarray((mm, K), a.dtype, buffer=nl.sbuf)  # a is [M, K]: rows in, PE transposes
    nisa.dma_copy(dst=rows, src=a[m0:m0 + mm, :])
    for kt in range(k_tiles):
        kk = min(TILE_K, K - kt * TILE_K)
        transpose_into(blk[0:kk, kt, :], rows[:, kt * TILE_K:kt * TILE_K + kk], a.dtype)
    return blk


def _moving(b, n0, nb, K, transpose_b):
    """Columns n0..n0+nb of op(b) as SBUF [128 (k), k_tiles, nb]."""
    k_tiles = (K + TILE_K - 1) // TILE_K
    blk = nl.ndarray((TILE_K, k_tiles, nb), b.dtype, buffer=nl.sbuf)
    if not transpose_b:  # b is [K, N]
        for kt in range(k_tiles):
            kk = min(TILE_K, K - kt * TILE_K)
            nisa.dma_copy(dst=blk[0:kk, kt, :], src=b[kt * TILE_K:kt * TILE_K + kk, n0:n0 + nb])
        return blk
    for j0, jj in row_tiles(nb):  # b is [N, K]: 128 of its rows at a time, transposed per k tile
        rows = nl.ndarray((jj, K), b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=b[n0 + j0:n0 + j0 + jj, :])
        for kt in range(k_tiles):
            kk = min(TILE_K, K - kt * TILE_K)
            transpose_into(blk[0:kk, kt, j0:j0 + jj], rows[:, kt * TILE_K:kt * TILE_K + kk], b.dtype)
    return blk


def gemm_into(out, a, b, transpose_a, transpose_b, bias=None, activation="none", pre_out=None):
    """out[M, N] = act(op(a) @ op(b) + bias); the pre-activation goes to `pre_out` when given."""
    M, K = (a.shape[1], a.shape[0]) if transpose_a else (a.shape[0], a.shape[1])
    N = b.shape[0] if transpose_b else b.shape[1]
    k_tiles = (K + TILE_K - 1) // TILE_K
    itemsize = 4 if b.dtype == nl.float32 else 2
    block_n = max(TILE_N, (RHS_BLOCK_BYTES // (k_tiles * itemsize)) // TILE_N * TILE_N)
    act = _act_op(activation)
    for n0 in range(0, N, block_n):
        nb = min(block_n, N - n0)
        rhs = _moving(b, n0, nb, K, transpose_b)
        bias_sb = None
        if bias is not None:
            bias_sb = nl.ndarray((TILE_M, nb), bias.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=bias_sb, src=bias[n0:n0 + nb].reshape((1, nb)).broadcast(0, TILE_M))
        for m0, mm in row_tiles(M):
            lhs = _stationary(a, m0, mm, K, transpose_a)
            res = nl.ndarray((mm, nb), out.dtype, buffer=nl.sbuf)
            pre = nl.ndarray((mm, nb), out.dtype, buffer=nl.sbuf) if act is not None else res
            for j0 in range(0, nb, TILE_N):
                nn = min(TILE_N, nb - j0)
                acc = _accumulate(lhs, rhs, K, j0, mm, nn)
                if bias_sb is not None:
                    nisa.tensor_tensor(dst=pre[:, j0:j0 + nn], data1=acc, data2=bias_sb[0:mm, j0:j0 + nn], op=nl.add)
                else:
                    nisa.tensor_copy(dst=pre[:, j0:j0 + nn], src=acc)
            if act is not None:
                nisa.activation(dst=res, op=act, data=pre)
                if pre_out is not None:
                    nisa.dma_copy(dst=pre_out[m0:m0 + mm, n0:n0 + nb], src=pre)
            nisa.dma_copy(dst=out[m0:m0 + mm, n0:n0 + nb], src=res)


@nki.jit
def gemm_kernel(a, b, bias, transpose_a, transpose_b, activation, save_pre):
    """act(op(a) @ op(b) + bias), op = transpose where asked; with save_pre also the pre-activation."""
    assert activation in ACTIVATIONS, f"activation must be one of {ACTIVATIONS}, got {activation!r}"
    M = a.shape[1] if transpose_a else a.shape[0]
    N = b.shape[0] if transpose_b else b.shape[1]
    out = nl.ndarray((M, N), a.dtype, buffer=nl.shared_hbm)
    if save_pre and activation != "none":
        pre = nl.ndarray((M, N), a.dtype, buffer=nl.shared_hbm)
        gemm_into(out, a, b, transpose_a, transpose_b, bias, activation, pre)
        return out, pre
    gemm_into(out, a, b, transpose_a, transpose_b, bias, activation)
    return out


@nki.jit
def linear_bwd_kernel(dy, x, w, with_bias):
    """dx = dy @ w, dw = dy.T @ x, db = column sums of dy, for y = x @ w.T + b (x [M, K], w [N, K])."""
    M, K = x.shape
    N = w.shape[0]
    dx = nl.ndarray((M, K), x.dtype, buffer=nl.shared_hbm)
    dw = nl.ndarray((N, K), w.dtype, buffer=nl.shared_hbm)
    gemm_into(dx, dy, w, False, False)
    gemm_into(dw, dy, x, True, False)
    if not with_bias:
        return dx, dw
    db = nl.ndarray((N,), nl.float32, buffer=nl.shared_hbm)
    sums = ColumnSums(N, banks=4)
    for r0, r in row_tiles(M):
        t = load_rows(dy, r0, r)
        tf = nl.ndarray((r, N), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=tf, src=t)
        sums.add(tf, r)
    sums.store(db)
    return dx, dw, db


@nki.jit
def activation_bwd_kernel(dy, pre, activation):
    """dy * act'(pre) for the activations of gemm_kernel ([rows, cols] tensors)."""
    rows, cols = pre.shape
    dz = nl.ndarray((rows, cols), dy.dtype, buffer=nl.shared_hbm)
    for r0, r in row_tiles(rows):
        z, g = load_rows(pre, r0, r), load_rows(dy, r0, r)
        d = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        _derivative(d, z, activation, r, cols)
        res = nl.ndarray((r, cols), dy.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=d, data2=g, op=nl.multiply)
        nisa.dma_copy(dst=dz[r0:r0 + r, :], src=res)
    return dz


_GELU_C = float(np.sqrt(2.0 / np.pi))
_GELU_A = 0.044715


def _derivative(d, z, activation, r, cols):
    if activation == "relu":
        nisa.tensor_scalar(dst=d, data=z, op0=nl.greater, operand0=0.0)
    elif activation == "gelu":
        nisa.activation(dst=d, op=nl.gelu_dx, data=z)
    elif activation == "silu":
        nisa.activation(dst=d, op=nl.silu_dx, data=z)
    elif activation == "gelu_tanh":
        # d/dz 0.5 z (1 + tanh(c (z + a z^3))) = 0.5 (1 + t) + 0.5 c z (1 - t^2) (1 + 3 a z^2)
        z2 = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=z2, op=nl.square, data=z)
        inner = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inner, data=z2, op0=nl.multiply, operand0=_GELU_A, op1=nl.add, operand1=1.0)
        u = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=u, data1=inner, data2=z, op=nl.multiply)
        t = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=t, op=nl.tanh, data=u, scale=_GELU_C)
        t2 = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=t2, op=nl.square, data=t)
        s = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)      # 0.5 c (1 - t^2)
        nisa.tensor_scalar(dst=s, data=t2, op0=nl.multiply, operand0=-0.5 * _GELU_C, op1=nl.add, operand1=0.5 * _GELU_C)
        poly = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)   # z (1 + 3 a z^2)
        nisa.tensor_scalar(dst=poly, data=z2, op0=nl.multiply, operand0=3 * _GELU_A, op1=nl.add, operand1=1.0)
        nisa.tensor_tensor(dst=poly, data1=poly, data2=z, op=nl.multiply)
        nisa.tensor_tensor(dst=s, data1=s, data2=poly, op=nl.multiply)
        half = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)   # 0.5 (1 + t)
        nisa.tensor_scalar(dst=half, data=t, op0=nl.add, operand0=1.0, op1=nl.multiply, operand1=0.5)
        nisa.tensor_tensor(dst=d, data1=half, data2=s, op=nl.add)
    else:
        raise AssertionError(f"activation {activation!r} has no derivative here")


def reference(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """fp32 products and accumulation (PSUM), rounded once to the output dtype."""
    return (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(lhsT.dtype)
