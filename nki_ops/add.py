"""Element-wise tensor add, written in NKI (current API): 128-partition row tiles, free dim in chunks."""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

FREE_CHUNK = 2048  # elements per partition per DMA: long contiguous runs keep DMA efficient


@nki.jit
def tensor_add_kernel(a, b):
    """out = a + b for 2-D HBM tensors of the same shape and dtype (any row count: the tail tile is partial)."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), a.dtype, buffer=nl.shared_hbm)
    for r0 in range(0, rows, nl.tile_size.pmax):
        r = min(nl.tile_size.pmax, rows - r0)
        for c0 in range(0, cols, FREE_CHUNK):
            c = min(FREE_CHUNK, cols - c0)
            a_t = nl.ndarray((r, c), a.dtype, buffer=nl.sbuf)
            b_t = nl.ndarray((r, c), b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a_t, src=a[r0:r0 + r, c0:c0 + c])
            nisa.dma_copy(dst=b_t, src=b[r0:r0 + r, c0:c0 + c])
            s = nl.ndarray((r, c), a.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=s, data1=a_t, data2=b_t, op=nl.add)
            nisa.dma_copy(dst=out[r0:r0 + r, c0:c0 + c], src=s)
    return out


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fp32 add, rounded to the inputs' dtype (the Vector engine computes in fp32 and casts on write)."""
    return (a.astype(np.float32) + b.astype(np.float32)).astype(a.dtype)
