"""Row softmax over the last dim, written in NKI (current API).

Rows go on partitions (128 per tile), a whole row lives in the free dim. Forward per tile: max-reduce
(Vector), exp(x - max) with the row sum fused into the same Scalar-engine instruction, reciprocal, scale.
Backward: dx = y * (dy - sum(dy * y)), the subtract and multiply fused in one scalar_tensor_tensor.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from ._tiles import load_rows, row_tiles


@nki.jit
def softmax_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), x.dtype, buffer=nl.shared_hbm)
    for r0, r in row_tiles(rows):
        t = load_rows(x, r0, r)
        row_max = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=t, axis=1, negate=True, keepdims=True)
        e = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        row_sum = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=row_max, reduce_op=nl.add, reduce_res=row_sum)
        inv = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=row_sum)
        y = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[r0:r0 + r, :], src=y)
    return out


@nki.jit
def softmax_bwd_kernel(dy, y):
    """dx for the forward's output y and the gradient dy (both [rows, cols])."""
    rows, cols = y.shape
    dx = nl.ndarray((rows, cols), y.dtype, buffer=nl.shared_hbm)
    for r0, r in row_tiles(rows):
        yt, gt = load_rows(y, r0, r), load_rows(dy, r0, r)
        prod = nl.ndarray((r, cols), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=prod, data1=gt, data2=yt, op=nl.multiply)
        dot = nl.ndarray((r, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=dot, op=nl.add, data=prod, axis=1, keepdims=True)
        out = nl.ndarray((r, cols), y.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=out, data=gt, op0=nl.subtract, operand0=dot, op1=nl.multiply, operand1=yt)
        nisa.dma_copy(dst=dx[r0:r0 + r, :], src=out)
    return dx


def reference(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.float32)
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)
