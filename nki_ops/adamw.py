"""Fused AdamW step over a list of parameters, written in NKI (current API); updates in place.

For each parameter (flattened), in 128-partition tiles of up to FREE_CHUNK elements per partition:
    m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
    p = p (1 - lr wd) - (lr / bc1) m / (sqrt(v / bc2) + eps)        (bc_i = 1 - b_i^step)
The values that change every step (lr / bc1, 1 - lr wd, 1 / bc2) arrive as a small fp32 tensor `hyper`, so
one compiled kernel serves every step; betas and eps are constants of the kernel.
"""

from __future__ import annotations

import math

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

FREE_CHUNK = 2048
PMAX = 128


def hyper_values(lr: float, weight_decay: float, beta1: float, beta2: float, step: int) -> list[float]:
    """[-lr / bc1, 1 - lr * wd, 1 / bc2]: what `hyper` holds for a step."""
    return [-lr / (1.0 - beta1 ** step), 1.0 - lr * weight_decay, 1.0 / (1.0 - beta2 ** step)]


def _update(p, g, m, v, hyp, beta1, beta2, eps, rows, cols):
    """One [rows, cols] piece of a parameter (HBM views p, g, m, v), updated in place."""
    pt = nl.ndarray((rows, cols), p.dtype, buffer=nl.sbuf)
    gt = nl.ndarray((rows, cols), g.dtype, buffer=nl.sbuf)
    mt = nl.ndarray((rows, cols), m.dtype, buffer=nl.sbuf)
    vt = nl.ndarray((rows, cols), v.dtype, buffer=nl.sbuf)
    for t, src in ((pt, p), (gt, g), (mt, m), (vt, v)):
        nisa.dma_copy(dst=t, src=src)
    gs = nl.ndarray((rows, cols), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=gs, data=gt, op0=nl.multiply, operand0=1.0 - beta1)
    nisa.scalar_tensor_tensor(dst=mt, data=mt, op0=nl.multiply, operand0=beta1, op1=nl.add, operand1=gs)
    nisa.activation(dst=gs, op=nl.square, data=gt, scale=math.sqrt(1.0 - beta2))
    nisa.scalar_tensor_tensor(dst=vt, data=vt, op0=nl.multiply, operand0=beta2, op1=nl.add, operand1=gs)
    den = nl.ndarray((rows, cols), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=den, op=nl.sqrt, data=vt, scale=hyp[0:rows, 2:3])
    nisa.tensor_scalar(dst=den, data=den, op0=nl.add, operand0=eps)
    nisa.reciprocal(dst=den, data=den)
    nisa.tensor_tensor(dst=den, data1=mt, data2=den, op=nl.multiply)
    nisa.tensor_scalar(dst=pt, data=pt, op0=nl.multiply, operand0=hyp[0:rows, 1:2])
    nisa.scalar_tensor_tensor(dst=pt, data=den, op0=nl.multiply, operand0=hyp[0:rows, 0:1], op1=nl.add, operand1=pt)
    for t, dst in ((pt, p), (mt, m), (vt, v)):
        nisa.dma_copy(dst=dst, src=t)


@nki.jit
def adamw_kernel(params, grads, exp_avgs, exp_avg_sqs, hyper, beta1, beta2, eps):
    """Update every (param, grad, exp_avg, exp_avg_sq) of the lists: 1-D HBM tensors of equal length each."""
    hyp = nl.ndarray((PMAX, 3), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=hyp, src=hyper.reshape((1, 3)).broadcast(0, PMAX))
    for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs):
        n = p.shape[0]
        per_row = n // PMAX
        for c0 in range(0, per_row, FREE_CHUNK):  # the 128-row body: element r * per_row + c
            cols = min(FREE_CHUNK, per_row - c0)
            views = [t[0:PMAX * per_row].reshape((PMAX, per_row))[:, c0:c0 + cols] for t in (p, g, m, v)]
            _update(*views, hyp, beta1, beta2, eps, PMAX, cols)
        tail = n - PMAX * per_row
        if tail:  # the last n % 128 elements as one row
            views = [t[PMAX * per_row:n].reshape((1, tail)) for t in (p, g, m, v)]
            _update(*views, hyp, beta1, beta2, eps, 1, tail)


def reference(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, lr: float, beta1: float, beta2: float,
              eps: float, weight_decay: float, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p, g, m, v = (a.astype(np.float32) for a in (p, g, m, v))
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
    p = p * (1 - lr * weight_decay) - lr / bc1 * m / (np.sqrt(v / bc2) + eps)
    return p, m, v
