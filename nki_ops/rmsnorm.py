"""RMSNorm over the last dim, written in NKI (current API): y = x / sqrt(mean(x^2) + eps) * w.

Forward: the weight row is DMA-broadcast to every partition once (a stride-0 HBM view); per 128-row tile the
sum of squares comes fused with the square on the Scalar engine. `rmsnorm_fwd_kernel` also returns the
per-row 1/rms the backward needs.

Backward, with g = dy * w and r = 1/rms per row:
    dx = r * g - x * r^3 * mean(g * x),   dw = sum over rows of dy * x * r
The dw column sums run on the Tensor engine (ones^T @ tile, accumulated in PSUM across row tiles).
A row lives on chip whole: rows longer than the target's SBUF allows raise err_sbuf_capacity_exceeded.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from ._tiles import ColumnSums, broadcast_rows, load_rows, row_tiles

EPS = 1e-6


def _forward(x, w, out, rstd_out, eps):
    rows, cols = x.shape
    w_sb = broadcast_rows(w, cols, w.dtype)
    for r0, r in row_tiles(rows):
        t = load_rows(x, r0, r)
        sq = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        ssum = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=t, reduce_op=nl.add, reduce_res=ssum)
        rstd = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=ssum, op0=nl.multiply, operand0=1.0 / cols, op1=nl.add, operand1=eps)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)
        y = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=y, data=t, op0=nl.multiply, operand0=rstd, op1=nl.multiply, operand1=w_sb[0:r, :])
        nisa.dma_copy(dst=out[r0:r0 + r, :], src=y)
        if rstd_out is not None:
            nisa.dma_copy(dst=rstd_out[r0:r0 + r, :], src=rstd)


@nki.jit
def rmsnorm_kernel(x, w):
    """y for x [rows, cols], w [cols] (eps 1e-6)."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    _forward(x, w, out, None, EPS)
    return out


@nki.jit
def rmsnorm_fwd_kernel(x, w, eps):
    """(y [rows, cols], rstd [rows, 1] fp32)."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    rstd = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
    _forward(x, w, out, rstd, eps)
    return out, rstd


@nki.jit
def rmsnorm_bwd_kernel(dy, x, w, rstd):
    """(dx [rows, cols] in x's dtype, dw [cols] fp32) from the forward's rstd."""
    rows, cols = x.shape
    dx = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    dw = nl.ndarray((cols,), nl.float32, buffer=nl.shared_hbm)
    w_sb = broadcast_rows(w, cols, w.dtype)
    dw_sums = ColumnSums(cols, banks=8)
    for r0, r in row_tiles(rows):
        xt, gt, rs = load_rows(x, r0, r), load_rows(dy, r0, r), load_rows(rstd, r0, r)
        xr = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)         # x * r, the normalised input
        nisa.tensor_scalar(dst=xr, data=xt, op0=nl.multiply, operand0=rs)
        dyxr = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=dyxr, data1=gt, data2=xr, op=nl.multiply)
        dw_sums.add(dyxr, r)
        g = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)          # dy * w
        nisa.tensor_tensor(dst=g, data1=gt, data2=w_sb[0:r, :], op=nl.multiply)
        gx = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        dot = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)           # sum(g * x * r) per row
        nisa.tensor_tensor(dst=gx, data1=g, data2=xr, op=nl.multiply)
        nisa.tensor_reduce(dst=dot, op=nl.add, data=gx, axis=1, keepdims=True)
        coef = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)          # -mean(g * x * r) * r
        nisa.tensor_scalar(dst=coef, data=dot, op0=nl.multiply, operand0=-1.0 / cols, op1=nl.multiply, operand1=rs)
        xc = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xc, data=xr, op0=nl.multiply, operand0=coef)
        out = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)           # r * g + (x r) * coef
        nisa.scalar_tensor_tensor(dst=out, data=g, op0=nl.multiply, operand0=rs, op1=nl.add, operand1=xc)
        nisa.dma_copy(dst=dx[r0:r0 + r, :], src=out)
    dw_sums.store(dw)
    return dx, dw


def reference(x: np.ndarray, w: np.ndarray, eps: float = EPS) -> np.ndarray:
    v = x.astype(np.float32)
    rstd = 1.0 / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + np.float32(eps))
    return (v * rstd * w.astype(np.float32)).astype(x.dtype)
