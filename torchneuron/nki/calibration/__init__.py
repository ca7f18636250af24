"""What the cost model is calibrated against: AWS's matrix-multiplication tutorial, whose four kernel
versions were measured on a trn1 NeuronCore for `[4096, 8192] @ [8192, 8192]` in bf16 (the NKI tutorial
"Matrix multiplication", Trn1.32xlarge): 51.80, 42.96, 22.07 and 6.97 ms.

The kernels here are written for this simulator (legacy `neuronxcc.nki` API, the tutorial's generation) and
follow the tutorial's four steps: tile the output (loads inside the contraction loop); hoist the loads out
of it; block both free dimensions; block the contraction too, with wide DMA transfers and an SBUF
accumulator. They exercise the mechanisms the model has to get right (DMA efficiency of short transfers,
overlap of DMA with the Tensor engine, PSUM drains); nothing in the model knows about these kernels.

    python -m torchneuron.nki.calibration            # the table in docs/nki.md (about a minute per version)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .. import legacy as nki
from ..hardware import Target, target_named
from ..legacy import isa as nisa
from ..legacy import language as nl
from ..legacy import typing as nt

TILE_M, TILE_K, TILE_N = 128, 128, 512

# AWS's measured latencies (ms) for lhsT [8192, 4096] and rhs [8192, 8192] in bf16 on trn1
PUBLISHED_MS = {"tiled": 51.80, "hoist_load": 42.96, "block_free_dims": 22.07, "fully_optimized": 6.97}
SHAPE = {"K": 8192, "M": 4096, "N": 8192}


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Step 1: one [128, 512] output tile at a time; both operand tiles loaded for every contraction step."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                b = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                     value=nl.copy(acc, dtype=result.dtype))
    return result


@nki.jit
def matmul_hoist_load(lhsT, rhs):
    """Step 2: the lhsT column of a row of output tiles is loaded once; rhs tiles once per output tile."""
    K, M = lhsT.shape
    _, N = rhs.shape
    kt = K // TILE_K
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        a = nl.ndarray((kt, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            a[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
        for n in nl.affine_range(N // TILE_N):
            b = nl.ndarray((kt, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(kt):
                b[k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(kt):
                acc += nl.matmul(a[k], b[k], transpose_x=True)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                     value=nl.copy(acc, dtype=result.dtype))
    return result


@nki.jit
def matmul_block_free_dims(lhsT, rhs, tiles_m=2, tiles_n=2):
    """Step 3: blocks of tiles_m x tiles_n output tiles share their operand loads."""
    K, M = lhsT.shape
    _, N = rhs.shape
    kt = K // TILE_K
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (TILE_M * tiles_m)):
        a = nl.ndarray((tiles_m, kt, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(tiles_m):
            col = (m * tiles_m + bm) * TILE_M
            for k in nl.affine_range(kt):
                a[bm, k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, col:col + TILE_M])
        for n in nl.affine_range(N // (TILE_N * tiles_n)):
            b = nl.ndarray((tiles_n, kt, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(tiles_n):
                col = (n * tiles_n + bn) * TILE_N
                for k in nl.affine_range(kt):
                    b[bn, k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, col:col + TILE_N])
            for bm in nl.affine_range(tiles_m):
                for bn in nl.affine_range(tiles_n):
                    acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(kt):
                        acc += nl.matmul(a[bm, k], b[bn, k], transpose_x=True)
                    row, col = (m * tiles_m + bm) * TILE_M, (n * tiles_n + bn) * TILE_N
                    nl.store(result[row:row + TILE_M, col:col + TILE_N], value=nl.copy(acc, dtype=result.dtype))
    return result


@nki.jit
def matmul_fully_optimized(lhsT, rhs, tiles_m=16, tiles_n=2, tiles_k=8):
    """Step 4: all three dims blocked; an operand block is one wide DMA per 128 rows; partial sums of a
    contraction block accumulate in PSUM, then into a bf16 SBUF result block, stored once per row."""
    K, M = lhsT.shape
    _, N = rhs.shape
    block_m, block_n, block_k = TILE_M * tiles_m, TILE_N * tiles_n, TILE_K * tiles_k
    blocks_m = M // block_m
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // block_n):
        res = nl.zeros((blocks_m, tiles_m, tiles_n, nl.par_dim(TILE_M), TILE_N), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.sequential_range(K // block_k):
            b = nl.ndarray((tiles_k, nl.par_dim(TILE_K), block_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(tiles_k):
                row = (k * tiles_k + bk) * TILE_K
                b[bk] = nl.load(rhs[row:row + TILE_K, n * block_n:(n + 1) * block_n])
            for m in nl.affine_range(blocks_m):
                a = nl.ndarray((tiles_k, nl.par_dim(TILE_K), block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                for bk in nl.affine_range(tiles_k):
                    row = (k * tiles_k + bk) * TILE_K
                    a[bk] = nl.load(lhsT[row:row + TILE_K, m * block_m:(m + 1) * block_m])
                for bn in nl.affine_range(tiles_n):
                    for bm in nl.affine_range(tiles_m):
                        acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tiles_k):
                            acc += nisa.nc_matmul(a[bk, :, bm * TILE_M:(bm + 1) * TILE_M],
                                                  b[bk, :, bn * TILE_N:(bn + 1) * TILE_N])
                        res[m, bm, bn] += acc
        for m in nl.affine_range(blocks_m):
            for bm in nl.affine_range(tiles_m):
                packed = nl.ndarray((TILE_M, block_n), dtype=res.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(tiles_n):
                    packed[:, bn * TILE_N:(bn + 1) * TILE_N] = nl.copy(res[m, bm, bn])
                row = (m * tiles_m + bm) * TILE_M
                nl.store(result[row:row + TILE_M, n * block_n:(n + 1) * block_n], value=packed)
    return result


KERNELS = {"tiled": matmul_tiled, "hoist_load": matmul_hoist_load, "block_free_dims": matmul_block_free_dims,
           "fully_optimized": matmul_fully_optimized}


@dataclass
class Calibration:
    kernel: str
    published_ms: float
    estimated_ms: float

    @property
    def ratio(self) -> float:
        return self.estimated_ms / self.published_ms


def calibrate(names: tuple[str, ...] = tuple(KERNELS), target: Target | None = None) -> list[Calibration]:
    """Estimate each tutorial version at the published shape (on trn1, where AWS measured them)."""
    from ..runner import launch

    lhsT = nt.tensor[[SHAPE["K"], SHAPE["M"]], nl.bfloat16].placeholder()
    rhs = nt.tensor[[SHAPE["K"], SHAPE["N"]], nl.bfloat16].placeholder()
    rows = []
    for name in names:
        report = launch(KERNELS[name].func, (lhsT, rhs), {}, (), "legacy", target or target_named("trn1")).report
        rows.append(Calibration(name, PUBLISHED_MS[name], report.latency_ns / 1e6))
    return rows


def main(argv: list[str]) -> None:
    rows = calibrate(tuple(argv) or tuple(KERNELS))
    print(json.dumps([{**r.__dict__, "ratio": round(r.ratio, 3)} for r in rows], indent=2))
