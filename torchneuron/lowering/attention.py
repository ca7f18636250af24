"""Decompositions of CPU flash attention (what SDPA becomes in AOTAutograd graphs traced on the host).

PyTorch's own decomposition of ``_scaled_dot_product_flash_attention_for_cpu`` returns the attention
weights where the op returns ``logsumexp``, which is harmless in inference and wrong as soon as the backward
op consumes it; and the backward op has no decomposition. Both are written here in math form (matmuls,
softmax statistics), which lowers to plain StableHLO. Grouped-query attention (fewer key/value heads than
query heads, Llama/Qwen/Mistral) repeats the key/value heads and sums their gradients back per group.
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _scores(q, k, is_causal, attn_mask, scale):
    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    return s, scale


def _groups(query, key) -> int:
    """Query heads per key/value head (grouped-query attention, as the CPU kernel supports: query head h reads
    key/value head h // groups)."""
    hq, hk = (query.shape[-3], key.shape[-3]) if query.dim() >= 3 else (1, 1)
    return hq // hk if hk and hq != hk else 1


def _expand_heads(t, groups: int):
    return t if groups == 1 else t.repeat_interleave(groups, dim=-3)


def _reduce_heads(t, groups: int):
    if groups == 1:
        return t
    *lead, h, s, d = t.shape
    return t.reshape(*lead, h // groups, groups, s, d).sum(dim=-3)


def flash_attention_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    if dropout_p != 0.0:
        return NotImplemented  # random: stays the op (no RNG lowering)
    g = _groups(query, key)
    key, value = _expand_heads(key, g), _expand_heads(value, g)
    s, _ = _scores(query.float(), key.float(), is_causal, attn_mask, scale)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    out = torch.matmul(p, value.float()).to(query.dtype)
    return out, lse


def flash_attention_cpu_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *,
                                 attn_mask=None, scale=None):
    if dropout_p != 0.0:
        return NotImplemented
    dt = query.dtype
    g = _groups(query, key)
    q, k, v, do, o = (t.float() for t in (query, _expand_heads(key, g), _expand_heads(value, g), grad_out, out))
    s, sc = _scores(q, k, is_causal, attn_mask, scale)
    p = torch.exp(s - logsumexp.float().unsqueeze(-1))
    dv = torch.matmul(p.transpose(-2, -1), do)
    dp = torch.matmul(do, v.transpose(-2, -1))
    d = (do * o).sum(dim=-1, keepdim=True)
    ds = p * (dp - d)
    dq = torch.matmul(ds, k) * sc
    dk = torch.matmul(ds.transpose(-2, -1), q) * sc
    return dq.to(dt), _reduce_heads(dk, g).to(dt), _reduce_heads(dv, g).to(dt)


def table() -> dict:
    return {
        aten._scaled_dot_product_flash_attention_for_cpu.default: flash_attention_cpu,
        aten._scaled_dot_product_flash_attention_for_cpu_backward.default: flash_attention_cpu_backward,
    }
