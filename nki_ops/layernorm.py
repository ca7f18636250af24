"""LayerNorm over the last dim, written in NKI (current API): y = (x - mean) / sqrt(var + eps) * gamma + beta.

Forward statistics come from the Vector engine's bn_stats (<= 512 elements per instruction) merged by
bn_aggr, the usual way to get a numerically stable mean/variance in one pass. `layernorm_fwd_kernel` also
returns per-row mean and 1/std for the backward:
    xhat = (x - mean) * rstd,  g = dy * gamma
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dgamma = sum_rows(dy * xhat),  dbeta = sum_rows(dy)
The column sums run on the Tensor engine (ones^T @ tile into PSUM). A row lives on chip whole: rows longer
than the target's SBUF allows raise err_sbuf_capacity_exceeded.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from ._tiles import ColumnSums, broadcast_rows, load_rows, row_tiles

EPS = 1e-5


def _forward(x, gamma, beta, out, mean_out, rstd_out, eps):
    rows, cols = x.shape
    fmax = nl.tile_size.bn_stats_fmax
    chunks = (cols + fmax - 1) // fmax
    g_sb = broadcast_rows(gamma, cols, gamma.dtype)
    b_sb = broadcast_rows(beta, cols, beta.dtype)
    for r0, r in row_tiles(rows):
        t = load_rows(x, r0, r)
        stats = nl.ndarray((r, 6 * chunks), nl.float32, buffer=nl.sbuf)
        for c in range(chunks):
            c0 = c * fmax
            nisa.bn_stats(dst=stats[:, 6 * c:6 * c + 6], data=t[:, c0:min(cols, c0 + fmax)])
        mv = nl.ndarray((r, 2), nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)
        rstd = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=mv[:, 1:2], op0=nl.add, operand0=eps, op1=nl.rsqrt, operand1=0.0)
        centered = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=centered, data=t, op0=nl.subtract, operand0=mv[:, 0:1], op1=nl.multiply, operand1=rstd)
        scaled = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=scaled, data1=centered, data2=g_sb[0:r, :], op=nl.multiply)
        y = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y, data1=scaled, data2=b_sb[0:r, :], op=nl.add)
        nisa.dma_copy(dst=out[r0:r0 + r, :], src=y)
        if mean_out is not None:
            nisa.dma_copy(dst=mean_out[r0:r0 + r, :], src=mv[:, 0:1])
            nisa.dma_copy(dst=rstd_out[r0:r0 + r, :], src=rstd)


@nki.jit
def layernorm_kernel(x, gamma, beta):
    """y for x [rows, cols], gamma/beta [cols] (eps 1e-5)."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    _forward(x, gamma, beta, out, None, None, EPS)
    return out


@nki.jit
def layernorm_fwd_kernel(x, gamma, beta, eps):
    """(y [rows, cols], mean [rows, 1] fp32, rstd [rows, 1] fp32)."""
    rows = x.shape[0]
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    mean = nl.ndarray((rows, 1), nl.float32, buffer=nl.shared_hbm)
    rstd = nl.ndarray((rows, 1), nl.float32, buffer=nl.shared_hbm)
    _forward(x, gamma, beta, out, mean, rstd, eps)
    return out, mean, rstd


@nki.jit
def layernorm_bwd_kernel(dy, x, gamma, mean, rstd):
    """(dx [rows, cols] in x's dtype, dgamma [cols] fp32, dbeta [cols] fp32)."""
    rows, cols = x.shape
    dx = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    dgamma = nl.ndarray((cols,), nl.float32, buffer=nl.shared_hbm)
    dbeta = nl.ndarray((cols,), nl.float32, buffer=nl.shared_hbm)
    g_sb = broadcast_rows(gamma, cols, gamma.dtype)
    dg_sums = ColumnSums(cols, banks=4)
    db_sums = ColumnSums(cols, banks=4)
    for r0, r in row_tiles(rows):
        xt, dyt = load_rows(x, r0, r), load_rows(dy, r0, r)
        mu, rs = load_rows(mean, r0, r), load_rows(rstd, r0, r)
        xhat = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xhat, data=xt, op0=nl.subtract, operand0=mu, op1=nl.multiply, operand1=rs)
        dyf = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=dyf, src=dyt)
        db_sums.add(dyf, r)
        dyx = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=dyx, data1=dyf, data2=xhat, op=nl.multiply)
        dg_sums.add(dyx, r)
        g = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        s1 = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)            # sum(g) per row
        nisa.tensor_tensor(dst=g, data1=dyf, data2=g_sb[0:r, :], op=nl.multiply)
        nisa.tensor_reduce(dst=s1, op=nl.add, data=g, axis=1, keepdims=True)
        gx = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        s2 = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)            # sum(g * xhat) per row
        nisa.tensor_tensor(dst=gx, data1=g, data2=xhat, op=nl.multiply)
        nisa.tensor_reduce(dst=s2, op=nl.add, data=gx, axis=1, keepdims=True)
        a = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=a, data=s1, op0=nl.multiply, operand0=-1.0 / cols)
        b = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=b, data=s2, op0=nl.multiply, operand0=-1.0 / cols)
        t = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)          # xhat * b + a
        nisa.tensor_scalar(dst=t, data=xhat, op0=nl.multiply, operand0=b, op1=nl.add, operand1=a)
        u = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=u, data1=g, data2=t, op=nl.add)
        out = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out, data=u, op0=nl.multiply, operand0=rs)
        nisa.dma_copy(dst=dx[r0:r0 + r, :], src=out)
    dg_sums.store(dgamma)
    db_sums.store(dbeta)
    return dx, dgamma, dbeta


def reference(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = EPS) -> np.ndarray:
    v = x.astype(np.float32)
    mean = v.mean(axis=-1, keepdims=True)
    var = v.var(axis=-1, keepdims=True)
    y = (v - mean) / np.sqrt(var + np.float32(eps)) * gamma.astype(np.float32) + beta.astype(np.float32)
    return y.astype(x.dtype)
