"""Causal attention, forward and backward (flash-style), written in NKI (current API).

q, k, v: [heads, seq, d] (batch folded into heads), d <= 128; any seq. Scores never exist as a
[seq, seq] matrix in HBM:

* seq <= 128 ("packed"): 128 // seq heads share one 128-row tile. One matmul gives every query-key pair of
  the tile, a block-diagonal causal mask (an NKI shared constant) removes pairs across heads and from the
  future, and one more matmul applies the probabilities to V. Small-sequence training (many heads, short
  context) is a handful of instructions per 128 rows.
* seq > 128 ("tiled"): per head and 128-row query tile, the key tiles up to the diagonal with a running row
  max, row sum and fp32 accumulator (online softmax); the diagonal tile is masked with affine_select.

`flash_attention_fwd_kernel` also returns the row log-sum-exp, which `flash_attention_bwd_kernel` uses to
recompute the probabilities: dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dO * O)), dQ = dS K * scale,
dK = dS^T Q * scale (the tiled backward keeps dQ accumulators for a head in SBUF, dK/dV in PSUM).
"""

from __future__ import annotations

import functools
import math

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

from ._tiles import PMAX, transpose_into

TILE = PMAX
NEG = -30000.0  # masked score: exp underflows to exactly 0 after the max is subtracted


@functools.lru_cache(maxsize=32)
def block_causal_mask(seq: int, heads: int) -> np.ndarray:
    """[heads*seq, heads*seq] additive mask: 0 where key <= query within the same head, NEG elsewhere
    (a compile-time constant of the kernel; cached, and copied by nl.shared_constant)."""
    idx = np.arange(heads * seq)
    p, j = idx[:, None], idx[None, :]
    return np.where((j <= p) & (j // seq == p // seq), 0.0, NEG).astype(np.float32)


def _load(src, rows, d, dtype):
    t = nl.ndarray((rows, d), dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def _transposed(t, dtype):
    rows, d = t.shape
    tt = nl.ndarray((d, rows), dtype, buffer=nl.sbuf)
    transpose_into(tt, t, dtype)
    return tt


def _mask_tile(seq, heads_per_tile):
    rows = seq * heads_per_tile
    mask_hbm = nl.shared_constant(block_causal_mask(seq, heads_per_tile), nl.float32)
    mask = nl.ndarray((rows, rows), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=mask, src=mask_hbm)
    return mask


def _causal_diagonal(s, rows):
    """Keep key index <= query index in a diagonal tile (query p, key j: p - j >= 0)."""
    nisa.affine_select(dst=s, pattern=[[-1, rows]], channel_multiplier=1, on_true_tile=s, on_false_value=NEG,
                       cmp_op=nl.greater_equal)


# ---- forward ----

def _packed_forward(q2, k2, v2, o2, lse2, heads, seq, d, scale, dtype):
    g = TILE // seq
    mask = _mask_tile(seq, g)
    for h0 in range(0, heads, g):
        rows = min(g, heads - h0) * seq
        r0 = h0 * seq
        qs = _load(q2[r0:r0 + rows, :], rows, d, dtype)
        ks = _load(k2[r0:r0 + rows, :], rows, d, dtype)
        vs = _load(v2[r0:r0 + rows, :], rows, d, dtype)
        qT, kT = _transposed(qs, dtype), _transposed(ks, dtype)
        s_ps = nl.ndarray((rows, rows), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=s_ps, stationary=qT, moving=kT)
        s = nl.ndarray((rows, rows), nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=s, data=s_ps, op0=nl.multiply, operand0=scale, op1=nl.add,
                                  operand1=mask[0:rows, 0:rows])
        neg_max = nl.ndarray((rows, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=s, axis=1, negate=True, keepdims=True)
        p = nl.ndarray((rows, rows), dtype, buffer=nl.sbuf)
        row_sum = nl.ndarray((rows, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_max, reduce_op=nl.add, reduce_res=row_sum)
        pT = _transposed(p, dtype)
        o_ps = nl.ndarray((rows, d), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=o_ps, stationary=pT, moving=vs)
        _finish_rows(o_ps, row_sum, neg_max, o2[r0:r0 + rows, :], lse2[r0:r0 + rows, :] if lse2 is not None else None,
                     rows, d, dtype)


def _finish_rows(acc, row_sum, neg_max, out, lse_out, rows, d, dtype):
    """out = acc / row_sum; lse = log(row_sum) + max."""
    inv = nl.ndarray((rows, 1), nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=inv, data=row_sum)
    o = nl.ndarray((rows, d), dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inv)
    nisa.dma_copy(dst=out, src=o)
    if lse_out is not None:
        lse = nl.ndarray((rows, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=lse, op=nl.log, data=row_sum)
        nisa.tensor_tensor(dst=lse, data1=lse, data2=neg_max, op=nl.subtract)
        nisa.dma_copy(dst=lse_out, src=lse)


def _tiled_forward(q, k, v, out, lse2, heads, seq, d, scale, dtype):
    for h in range(heads):
        for q0 in range(0, seq, TILE):
            qr = min(TILE, seq - q0)
            qT = _transposed(_load(q[h, q0:q0 + qr, :], qr, d, dtype), dtype)
            m = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=m, value=NEG)
            l_sum = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=l_sum, value=0.0)
            acc = nl.ndarray((qr, d), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            for k0 in range(0, q0 + qr, TILE):
                kr = min(TILE, seq - k0)
                kT = _transposed(_load(k[h, k0:k0 + kr, :], kr, d, dtype), dtype)
                vt = _load(v[h, k0:k0 + kr, :], kr, d, dtype)
                s_ps = nl.ndarray((qr, kr), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=s_ps, stationary=qT, moving=kT)
                s = nl.ndarray((qr, kr), nl.float32, buffer=nl.sbuf)
                nisa.tensor_scalar(dst=s, data=s_ps, op0=nl.multiply, operand0=scale)
                if k0 == q0:
                    _causal_diagonal(s, kr)
                tile_max = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
                nisa.tensor_reduce(dst=tile_max, op=nl.maximum, data=s, axis=1, keepdims=True)
                m_new = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=m_new, data1=m, data2=tile_max, op=nl.maximum)
                neg_m = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
                nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
                p = nl.ndarray((qr, kr), dtype, buffer=nl.sbuf)
                row_sum = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_m, reduce_op=nl.add, reduce_res=row_sum)
                alpha = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=alpha, op=nl.exp, data=m, bias=neg_m)
                nisa.scalar_tensor_tensor(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=alpha, op1=nl.add,
                                          operand1=row_sum)
                pT = _transposed(p, dtype)
                pv = nl.ndarray((qr, d), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=pv, stationary=pT, moving=vt)
                nisa.scalar_tensor_tensor(dst=acc, data=acc, op0=nl.multiply, operand0=alpha, op1=nl.add, operand1=pv)
                nisa.tensor_copy(dst=m, src=m_new)
            neg = nl.ndarray((qr, 1), nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg, data=m, op0=nl.multiply, operand0=-1.0)
            lse_out = lse2[h * seq + q0:h * seq + q0 + qr, :] if lse2 is not None else None
            _finish_rows(acc, l_sum, neg, out[h, q0:q0 + qr, :], lse_out, qr, d, dtype)


def _forward(q, k, v, out, lse, scale):
    heads, seq, d = q.shape
    lse2 = lse.reshape((heads * seq, 1)) if lse is not None else None
    if seq <= TILE:
        _packed_forward(q.reshape((heads * seq, d)), k.reshape((heads * seq, d)), v.reshape((heads * seq, d)),
                        out.reshape((heads * seq, d)), lse2, heads, seq, d, scale, q.dtype)
    else:
        _tiled_forward(q, k, v, out, lse2, heads, seq, d, scale, q.dtype)


@nki.jit
def causal_attention_kernel(q, k, v):
    """softmax(q k^T / sqrt(d) + causal mask) v."""
    out = nl.ndarray(q.shape, q.dtype, buffer=nl.shared_hbm)
    _forward(q, k, v, out, None, 1.0 / math.sqrt(q.shape[2]))
    return out


@nki.jit
def flash_attention_fwd_kernel(q, k, v, scale):
    """(out [heads, seq, d], lse [heads, seq] fp32)."""
    heads, seq, _ = q.shape
    out = nl.ndarray(q.shape, q.dtype, buffer=nl.shared_hbm)
    lse = nl.ndarray((heads, seq), nl.float32, buffer=nl.shared_hbm)
    _forward(q, k, v, out, lse, scale)
    return out, lse


# ---- backward ----

def _row_dot(a, b, rows):
    """rowsum(a * b) as [rows, 1] fp32."""
    prod = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=prod, data1=a, data2=b, op=nl.multiply)
    dot = nl.ndarray((rows, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=dot, op=nl.add, data=prod, axis=1, keepdims=True)
    return dot


def _neg_lse(lse_src, rows):
    t = nl.ndarray((rows, 1), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=lse_src)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
    return t


def _store_scaled(acc, dst, scale, rows, d, dtype):
    t = nl.ndarray((rows, d), dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=t, data=acc, op0=nl.multiply, operand0=scale)
    nisa.dma_copy(dst=dst, src=t)


def _packed_backward(q2, k2, v2, o2, do2, lse2, dq2, dk2, dv2, heads, seq, d, scale, dtype):
    g = TILE // seq
    mask = _mask_tile(seq, g)
    for h0 in range(0, heads, g):
        rows = min(g, heads - h0) * seq
        r0 = h0 * seq
        qs, ks = _load(q2[r0:r0 + rows, :], rows, d, dtype), _load(k2[r0:r0 + rows, :], rows, d, dtype)
        vs, os_ = _load(v2[r0:r0 + rows, :], rows, d, dtype), _load(o2[r0:r0 + rows, :], rows, d, dtype)
        dos = _load(do2[r0:r0 + rows, :], rows, d, dtype)
        neg_lse = _neg_lse(lse2[r0:r0 + rows, :], rows)
        qT, kT, vT, doT = (_transposed(t, dtype) for t in (qs, ks, vs, dos))
        s_ps = nl.ndarray((rows, rows), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=s_ps, stationary=qT, moving=kT)
        s = nl.ndarray((rows, rows), nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=s, data=s_ps, op0=nl.multiply, operand0=scale, op1=nl.add,
                                  operand1=mask[0:rows, 0:rows])
        p = nl.ndarray((rows, rows), dtype, buffer=nl.sbuf)
        nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_lse)
        dv_ps = nl.ndarray((rows, d), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=dv_ps, stationary=p, moving=dos)
        _store_scaled(dv_ps, dv2[r0:r0 + rows, :], 1.0, rows, d, dtype)
        dp_ps = nl.ndarray((rows, rows), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=dp_ps, stationary=doT, moving=vT)
        di = _row_dot(dos, os_, rows)
        ds = nl.ndarray((rows, rows), dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=ds, data=dp_ps, op0=nl.subtract, operand0=di, op1=nl.multiply, operand1=p)
        dk_ps = nl.ndarray((rows, d), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=dk_ps, stationary=ds, moving=qs)
        _store_scaled(dk_ps, dk2[r0:r0 + rows, :], scale, rows, d, dtype)
        dsT = _transposed(ds, dtype)
        dq_ps = nl.ndarray((rows, d), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=dq_ps, stationary=dsT, moving=ks)
        _store_scaled(dq_ps, dq2[r0:r0 + rows, :], scale, rows, d, dtype)


def _tiled_backward(q, k, v, o, do, lse2, dq, dk, dv, heads, seq, d, scale, dtype):
    starts = [(t0, min(TILE, seq - t0)) for t0 in range(0, seq, TILE)]
    for h in range(heads):
        qs, qT, dos, doT, neg_lse, di, dq_acc = [], [], [], [], [], [], []
        for t0, tr in starts:  # per query tile: what every key tile needs from it
            qt = _load(q[h, t0:t0 + tr, :], tr, d, dtype)
            dot = _load(do[h, t0:t0 + tr, :], tr, d, dtype)
            ot = _load(o[h, t0:t0 + tr, :], tr, d, dtype)
            qs.append(qt)
            qT.append(_transposed(qt, dtype))
            dos.append(dot)
            doT.append(_transposed(dot, dtype))
            neg_lse.append(_neg_lse(lse2[h * seq + t0:h * seq + t0 + tr, :], tr))
            di.append(_row_dot(dot, ot, tr))
            acc = nl.ndarray((tr, d), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            dq_acc.append(acc)
        for j, (k0, kr) in enumerate(starts):
            kt = _load(k[h, k0:k0 + kr, :], kr, d, dtype)
            kT = _transposed(kt, dtype)
            vT = _transposed(_load(v[h, k0:k0 + kr, :], kr, d, dtype), dtype)
            dk_ps = nl.ndarray((kr, d), nl.float32, buffer=nl.psum)
            dv_ps = nl.ndarray((kr, d), nl.float32, buffer=nl.psum)
            for i in range(j, len(starts)):
                qr = starts[i][1]
                s_ps = nl.ndarray((qr, kr), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=s_ps, stationary=qT[i], moving=kT)
                s = nl.ndarray((qr, kr), nl.float32, buffer=nl.sbuf)
                nisa.tensor_scalar(dst=s, data=s_ps, op0=nl.multiply, operand0=scale)
                if i == j:
                    _causal_diagonal(s, kr)
                p = nl.ndarray((qr, kr), dtype, buffer=nl.sbuf)
                nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_lse[i])
                nisa.nc_matmul(dst=dv_ps, stationary=p, moving=dos[i])
                dp_ps = nl.ndarray((qr, kr), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=dp_ps, stationary=doT[i], moving=vT)
                ds = nl.ndarray((qr, kr), dtype, buffer=nl.sbuf)
                nisa.scalar_tensor_tensor(dst=ds, data=dp_ps, op0=nl.subtract, operand0=di[i], op1=nl.multiply,
                                          operand1=p)
                nisa.nc_matmul(dst=dk_ps, stationary=ds, moving=qs[i])
                dsT = _transposed(ds, dtype)
                dq_ps = nl.ndarray((qr, d), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=dq_ps, stationary=dsT, moving=kt)
                nisa.tensor_tensor(dst=dq_acc[i], data1=dq_acc[i], data2=dq_ps, op=nl.add)
            _store_scaled(dk_ps, dk[h, k0:k0 + kr, :], scale, kr, d, dtype)
            _store_scaled(dv_ps, dv[h, k0:k0 + kr, :], 1.0, kr, d, dtype)
        for (t0, tr), acc in zip(starts, dq_acc):
            _store_scaled(acc, dq[h, t0:t0 + tr, :], scale, tr, d, dtype)


@nki.jit
def flash_attention_bwd_kernel(q, k, v, o, do, lse, scale):
    """(dq, dk, dv) of the causal attention forward, from its output o and row log-sum-exp lse."""
    heads, seq, d = q.shape
    dq = nl.ndarray(q.shape, q.dtype, buffer=nl.shared_hbm)
    dk = nl.ndarray(q.shape, q.dtype, buffer=nl.shared_hbm)
    dv = nl.ndarray(q.shape, q.dtype, buffer=nl.shared_hbm)
    lse2 = lse.reshape((heads * seq, 1))
    if seq <= TILE:
        flat = [t.reshape((heads * seq, d)) for t in (q, k, v, o, do)]
        _packed_backward(*flat, lse2, dq.reshape((heads * seq, d)), dk.reshape((heads * seq, d)),
                         dv.reshape((heads * seq, d)), heads, seq, d, scale, q.dtype)
    else:
        _tiled_backward(q, k, v, o, do, lse2, dq, dk, dv, heads, seq, d, scale, q.dtype)
    return dq, dk, dv


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    qf, kf, vf = (a.astype(np.float32) for a in (q, k, v))
    seq, d = q.shape[1], q.shape[2]
    scores = qf @ kf.transpose(0, 2, 1) / np.float32(math.sqrt(d))
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    return (probs @ vf).astype(q.dtype)
