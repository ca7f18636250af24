"""Rotary position embedding (rotate-half form), written in NKI (current API).

x: [heads, seq, d] (batch folded into heads), cos/sin: [seq, d] with d even:
    y[..., :d/2] = x1 * cos1 - x2 * sin1,   y[..., d/2:] = x2 * cos2 + x1 * sin2
Positions go on partitions; a position tile holds a block of heads side by side in the free dim, so cos/sin
are loaded once per block (a stride-0 DMA over the heads) and each half is three Vector instructions.
The backward is the transposed rotation (`inverse=True`): dx1 = dy1 * cos1 + dy2 * sin2,
dx2 = dy2 * cos2 - dy1 * sin1.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from ._tiles import row_tiles

FREE_ELEMENTS = 4096  # heads x d per tile: keeps the working tiles well inside SBUF


@nki.jit
def rotary_kernel(x, cos, sin, inverse):
    heads, seq, d = x.shape
    assert d % 2 == 0, f"rotary embedding needs an even head dim, got {d}"
    half = d // 2
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    block = max(1, min(heads, FREE_ELEMENTS // d))
    for s0, sp in row_tiles(seq):
        for h0 in range(0, heads, block):
            nb = min(block, heads - h0)
            xt = nl.ndarray((sp, nb, d), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=xt, src=x[h0:h0 + nb, s0:s0 + sp, :].permute((1, 0, 2)))
            c = nl.ndarray((sp, nb, d), cos.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=c, src=cos[s0:s0 + sp, :].reshape((sp, 1, d)).broadcast(1, nb))
            s = nl.ndarray((sp, nb, d), sin.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=sin[s0:s0 + sp, :].reshape((sp, 1, d)).broadcast(1, nb))
            x1, x2 = xt[:, :, 0:half], xt[:, :, half:d]
            # forward pairs x2 with sin1 and x1 with sin2; the inverse pairs x2 with sin2 and x1 with sin1
            s_for_x2 = s[:, :, half:d] if inverse else s[:, :, 0:half]
            s_for_x1 = s[:, :, 0:half] if inverse else s[:, :, half:d]
            a = nl.ndarray((sp, nb, half), nl.float32, buffer=nl.sbuf)
            b = nl.ndarray((sp, nb, half), nl.float32, buffer=nl.sbuf)
            y = nl.ndarray((sp, nb, d), x.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=a, data1=x1, data2=c[:, :, 0:half], op=nl.multiply)
            nisa.tensor_tensor(dst=b, data1=x2, data2=s_for_x2, op=nl.multiply)
            nisa.tensor_tensor(dst=y[:, :, 0:half], data1=a, data2=b, op=nl.add if inverse else nl.subtract)
            nisa.tensor_tensor(dst=a, data1=x2, data2=c[:, :, half:d], op=nl.multiply)
            nisa.tensor_tensor(dst=b, data1=x1, data2=s_for_x1, op=nl.multiply)
            nisa.tensor_tensor(dst=y[:, :, half:d], data1=a, data2=b, op=nl.subtract if inverse else nl.add)
            nisa.dma_copy(dst=out[h0:h0 + nb, s0:s0 + sp, :].permute((1, 0, 2)), src=y)
    return out


def reference(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    v = x.astype(np.float32)
    half = x.shape[-1] // 2
    rot = np.concatenate([-v[..., half:], v[..., :half]], axis=-1)
    return (v * cos.astype(np.float32) + rot * sin.astype(np.float32)).astype(x.dtype)
