"""Causal attention forward (flash-style, online softmax), written in NKI (current API).

q, k, v: [heads, seq, d] with seq a multiple of 128 and d <= 128. For each 128-row query tile the kernel
walks the key tiles up to the diagonal, keeping a running row max `m`, row sum `l` and fp32 accumulator,
so the [seq, seq] score matrix never exists. The diagonal tile is masked with an affine_select on the
GpSimd engine (keep key index <= query index).
"""

from __future__ import annotations

import math

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

TILE = 128
NEG = -30000.0  # masked score: exp underflows to exactly 0 after the max is subtracted


def _load_transposed(src, rows, d, dtype):
    """HBM [rows, d] -> SBUF [d, rows] through the Tensor engine (d on partitions for the contraction)."""
    t = nl.ndarray((rows, d), dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    t_ps = nl.ndarray((d, rows), dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=t_ps, data=t)
    t_sb = nl.ndarray((d, rows), dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t_sb, src=t_ps)
    return t_sb


@nki.jit
def causal_attention_kernel(q, k, v):
    heads, seq, d = q.shape
    assert seq % TILE == 0 and d <= TILE, f"seq must be a multiple of {TILE} and d <= {TILE}, got {seq}, {d}"
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((heads, seq, d), q.dtype, buffer=nl.shared_hbm)
    for h in range(heads):
        for qi in range(seq // TILE):
            q_t = _load_transposed(q[h, qi * TILE:(qi + 1) * TILE, :], TILE, d, q.dtype)
            m = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=m, value=NEG)
            l_sum = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=l_sum, value=0.0)
            acc = nl.ndarray((TILE, d), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            for kj in range(qi + 1):
                k_t = _load_transposed(k[h, kj * TILE:(kj + 1) * TILE, :], TILE, d, k.dtype)
                v_t = nl.ndarray((TILE, d), v.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=v_t, src=v[h, kj * TILE:(kj + 1) * TILE, :])
                s_ps = nl.ndarray((TILE, TILE), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=s_ps, stationary=q_t, moving=k_t)
                s = nl.ndarray((TILE, TILE), nl.float32, buffer=nl.sbuf)
                nisa.tensor_scalar(dst=s, data=s_ps, op0=nl.multiply, operand0=scale)
                if kj == qi:  # keep q_index - k_index >= 0
                    nisa.affine_select(dst=s, pattern=[[-1, TILE]], channel_multiplier=1, on_true_tile=s,
                                       on_false_value=NEG, cmp_op=nl.greater_equal)
                tile_max = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
                nisa.tensor_reduce(dst=tile_max, op=nl.maximum, data=s, axis=1, keepdims=True)
                m_new = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=m_new, data1=m, data2=tile_max, op=nl.maximum)
                neg_m = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
                nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
                p = nl.ndarray((TILE, TILE), q.dtype, buffer=nl.sbuf)
                row_sum = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_m, reduce_op=nl.add, reduce_res=row_sum)
                alpha = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=alpha, op=nl.exp, data=m, bias=neg_m)
                nisa.scalar_tensor_tensor(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=alpha, op1=nl.add,
                                          operand1=row_sum)
                p_ps = nl.ndarray((TILE, TILE), q.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=p_ps, data=p)
                p_t = nl.ndarray((TILE, TILE), q.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=p_t, src=p_ps)
                pv = nl.ndarray((TILE, d), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=pv, stationary=p_t, moving=v_t)
                nisa.scalar_tensor_tensor(dst=acc, data=acc, op0=nl.multiply, operand0=alpha, op1=nl.add, operand1=pv)
                nisa.tensor_copy(dst=m, src=m_new)
            inv = nl.ndarray((TILE, 1), nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(dst=inv, data=l_sum)
            o = nl.ndarray((TILE, d), q.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inv)
            nisa.dma_copy(dst=out[h, qi * TILE:(qi + 1) * TILE, :], src=o)
    return out


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    qf, kf, vf = (a.astype(np.float32) for a in (q, k, v))
    seq, d = q.shape[1], q.shape[2]
    scores = qf @ kf.transpose(0, 2, 1) / np.float32(math.sqrt(d))
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    return (probs @ vf).astype(q.dtype)
