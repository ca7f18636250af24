"""Row softmax over the last dim, written in NKI (current API).

Rows go on partitions (128 per tile), a whole row lives in the free dim. Per tile: max-reduce (Vector),
exp(x - max) with the row sum fused into the same Scalar-engine instruction, reciprocal, scale.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki


@nki.jit
def softmax_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), x.dtype, buffer=nl.shared_hbm)
    for r0 in range(0, rows, nl.tile_size.pmax):
        r = min(nl.tile_size.pmax, rows - r0)
        t = nl.ndarray((r, cols), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r0:r0 + r, :])
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


def reference(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.float32)
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)
