"""2-D transpose on the Tensor engine, written in NKI (current API): 128x128 blocks through PSUM."""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

BLOCK = 128


@nki.jit
def transpose_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), x.dtype, buffer=nl.shared_hbm)
    for r0 in range(0, rows, BLOCK):
        r = min(BLOCK, rows - r0)
        for c0 in range(0, cols, BLOCK):
            c = min(BLOCK, cols - c0)
            tile = nl.ndarray((r, c), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=x[r0:r0 + r, c0:c0 + c])
            flipped = nl.ndarray((c, r), x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=tile)
            back = nl.ndarray((c, r), x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=back, src=flipped)
            nisa.dma_copy(dst=out[c0:c0 + c, r0:r0 + r], src=back)
    return out


def reference(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.T)
