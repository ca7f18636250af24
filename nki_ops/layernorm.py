"""LayerNorm over the last dim, written in NKI (current API): y = (x - mean) / sqrt(var + eps) * gamma + beta.

Statistics come from the Vector engine's bn_stats (<= 512 elements per instruction) merged by bn_aggr,
the usual way to get a numerically stable mean/variance in one pass.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

EPS = 1e-5


@nki.jit
def layernorm_kernel(x, gamma, beta):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), x.dtype, buffer=nl.shared_hbm)
    pmax = nl.tile_size.pmax
    fmax = nl.tile_size.bn_stats_fmax
    chunks = (cols + fmax - 1) // fmax
    g_sb = nl.ndarray((pmax, cols), gamma.dtype, buffer=nl.sbuf)
    b_sb = nl.ndarray((pmax, cols), beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_sb, src=gamma.reshape((1, cols)).broadcast(0, pmax))
    nisa.dma_copy(dst=b_sb, src=beta.reshape((1, cols)).broadcast(0, pmax))
    for r0 in range(0, rows, pmax):
        r = min(pmax, rows - r0)
        t = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r0:r0 + r, :])
        stats = nl.ndarray((r, 6 * chunks), nl.float32, buffer=nl.sbuf)
        for c in range(chunks):
            c0 = c * fmax
            nisa.bn_stats(dst=stats[:, 6 * c:6 * c + 6], data=t[:, c0:min(cols, c0 + fmax)])
        mv = nl.ndarray((r, 2), nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)
        rstd = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=mv[:, 1:2], op0=nl.add, operand0=EPS, op1=nl.rsqrt, operand1=0.0)
        centered = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=centered, data=t, op0=nl.subtract, operand0=mv[:, 0:1], op1=nl.multiply, operand1=rstd)
        scaled = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=scaled, data1=centered, data2=g_sb[0:r, :], op=nl.multiply)
        y = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y, data1=scaled, data2=b_sb[0:r, :], op=nl.add)
        nisa.dma_copy(dst=out[r0:r0 + r, :], src=y)
    return out


def reference(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = EPS) -> np.ndarray:
    v = x.astype(np.float32)
    mean = v.mean(axis=-1, keepdims=True)
    var = v.var(axis=-1, keepdims=True)
    y = (v - mean) / np.sqrt(var + np.float32(eps)) * gamma.astype(np.float32) + beta.astype(np.float32)
    return y.astype(x.dtype)
