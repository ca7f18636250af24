"""Tiled matmul with PSUM accumulation, written in NKI (current API).

out[M, N] = lhsT[K, M].T @ rhs[K, N]. The contraction K runs on the 128 partitions; each output tile
[128, 512] accumulates its K/128 partial products in one PSUM bank (the first matmul of the group
overwrites, later ones add). A block of `rhs` columns is loaded into SBUF once and reused for every row
tile of the output, so HBM traffic is one pass over each input, and the Tensor engine, not DMA, bounds it.
lhsT is loaded LHS_BLOCK columns at a time (1 KiB per partition in bf16): 128-column loads would be 256-byte
DMA descriptors, which spend most of the DMA time on per-descriptor overhead.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

TILE_K = 128   # partitions: the contraction per matmul instruction
TILE_M = 128   # stationary free size
TILE_N = 512   # moving free size: one PSUM bank of fp32
RHS_BLOCK_BYTES = 96 * 1024  # SBUF per partition given to the resident rhs block
LHS_BLOCK = 4 * TILE_M       # lhsT columns per load


def _load_lhs(lhsT, m0, mm, k_tiles):
    K = lhsT.shape[0]
    lhs_sb = nl.ndarray((TILE_K, k_tiles, mm), lhsT.dtype, buffer=nl.sbuf)
    for kt in range(k_tiles):
        kk = min(TILE_K, K - kt * TILE_K)
        nisa.dma_copy(dst=lhs_sb[0:kk, kt, :], src=lhsT[kt * TILE_K:kt * TILE_K + kk, m0:m0 + mm])
    return lhs_sb


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


def reference(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """fp32 products and accumulation (PSUM), rounded once to the output dtype."""
    return (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(lhsT.dtype)
