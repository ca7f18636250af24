"""AWS's matrix-multiplication tutorial in the current API (`nki.isa.dma_copy` / `nc_matmul(dst=...)`),
written for this simulator from the same four steps as the legacy versions in this package: tile the output,
hoist the loads out of the contraction loop, block both free dimensions, block the contraction with wide
transfers and an SBUF accumulator. Same shape and published latencies; the benchmark times them against the
issue's 15 s per kernel (`benchmarks/nki_sim.py --cases current_tutorial`)."""

from __future__ import annotations

from ... import nki
from .. import isa as nisa
from .. import language as nl
from . import TILE_K, TILE_M, TILE_N


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Step 1: one PSUM tile per output tile; both operand tiles loaded inside the contraction loop."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                nisa.dma_copy(dst=b, src=rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            _drain(acc, result, m * TILE_M, n * TILE_N)
    return result


def _load_column(src, col, width, count):
    """`count` tiles of [128, width] from rows k * 128 of `src`, columns col:col+width."""
    tiles = []
    for k in nl.affine_range(count):
        t = nl.ndarray((TILE_K, width), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src[k * TILE_K:(k + 1) * TILE_K, col:col + width])
        tiles.append(t)
    return tiles


def _drain(acc, result, row, col):
    """PSUM -> SBUF in the result's dtype, then one store of the tile."""
    out = nl.ndarray(acc.shape, dtype=result.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=result[row:row + acc.shape[0], col:col + acc.shape[1]], src=out)


@nki.jit
def matmul_hoist_load(lhsT, rhs):
    """Step 2: a column of lhsT tiles loaded once per output row, a column of rhs tiles once per tile."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        a = _load_column(lhsT, m * TILE_M, TILE_M, K // TILE_K)
        for n in nl.affine_range(N // TILE_N):
            b = _load_column(rhs, n * TILE_N, TILE_N, K // TILE_K)
            acc = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                nisa.nc_matmul(dst=acc, stationary=a[k], moving=b[k])
            _drain(acc, result, m * TILE_M, n * TILE_N)
    return result


@nki.jit
def matmul_block_free_dims(lhsT, rhs, tiles_m=2, tiles_n=2):
    """Step 3: blocks of tiles_m x tiles_n output tiles share their operand columns."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (TILE_M * tiles_m)):
        a = [_load_column(lhsT, (m * tiles_m + bm) * TILE_M, TILE_M, K // TILE_K) for bm in range(tiles_m)]
        for n in nl.affine_range(N // (TILE_N * tiles_n)):
            b = [_load_column(rhs, (n * tiles_n + bn) * TILE_N, TILE_N, K // TILE_K) for bn in range(tiles_n)]
            for bm in nl.affine_range(tiles_m):
                for bn in nl.affine_range(tiles_n):
                    acc = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // TILE_K):
                        nisa.nc_matmul(dst=acc, stationary=a[bm][k], moving=b[bn][k])
                    _drain(acc, result, (m * tiles_m + bm) * TILE_M, (n * tiles_n + bn) * TILE_N)
    return result


@nki.jit
def matmul_fully_optimized(lhsT, rhs, tiles_m=16, tiles_n=2, tiles_k=8):
    """Step 4: all three dims blocked; one wide transfer per 128 operand rows; each contraction block's
    partial sums go from PSUM into a bf16 SBUF accumulator, stored once per output row of tiles."""
    K, M = lhsT.shape
    _, N = rhs.shape
    block_m, block_n, block_k = TILE_M * tiles_m, TILE_N * tiles_n, TILE_K * tiles_k
    blocks_m = M // block_m
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // block_n):
        res = [[[nl.ndarray((TILE_M, TILE_N), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(tiles_n)]
                for _ in range(tiles_m)] for _ in range(blocks_m)]
        for row in res:
            for tiles in row:
                for t in tiles:
                    nisa.memset(dst=t, value=0.0)
        for k in nl.sequential_range(K // block_k):
            b = []
            for bk in range(tiles_k):
                t = nl.ndarray((TILE_K, block_n), dtype=rhs.dtype, buffer=nl.sbuf)
                r0 = (k * tiles_k + bk) * TILE_K
                nisa.dma_copy(dst=t, src=rhs[r0:r0 + TILE_K, n * block_n:(n + 1) * block_n])
                b.append(t)
            for m in nl.affine_range(blocks_m):
                a = []
                for bk in range(tiles_k):
                    t = nl.ndarray((TILE_K, block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                    r0 = (k * tiles_k + bk) * TILE_K
                    nisa.dma_copy(dst=t, src=lhsT[r0:r0 + TILE_K, m * block_m:(m + 1) * block_m])
                    a.append(t)
                for bn in nl.affine_range(tiles_n):
                    for bm in nl.affine_range(tiles_m):
                        acc = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tiles_k):
                            nisa.nc_matmul(dst=acc, stationary=a[bk][:, bm * TILE_M:(bm + 1) * TILE_M],
                                           moving=b[bk][:, bn * TILE_N:(bn + 1) * TILE_N])
                        dst = res[m][bm][bn]
                        nisa.tensor_tensor(dst=dst, data1=dst, data2=acc, op=nl.add)
        for m in nl.affine_range(blocks_m):
            for bm in nl.affine_range(tiles_m):
                packed = nl.ndarray((TILE_M, block_n), dtype=lhsT.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(tiles_n):
                    nisa.tensor_copy(dst=packed[:, bn * TILE_N:(bn + 1) * TILE_N], src=res[m][bm][bn])
                r0 = (m * tiles_m + bm) * TILE_M
                nisa.dma_copy(dst=result[r0:r0 + TILE_M, n * block_n:(n + 1) * block_n], src=packed)
    return result


KERNELS = {"tiled": matmul_tiled, "hoist_load": matmul_hoist_load, "block_free_dims": matmul_block_free_dims,
           "fully_optimized": matmul_fully_optimized}
