"""Decompositions applied while AOTAutograd traces, before partitioning.

Deliberately few: each lowered piece is decomposed again by the Neuron lowering table when it is traced for
StableHLO, and the op coverage table (which decides what runs eagerly) is keyed on the ops eager mode runs, so
the AOT graph keeps those ops. What is rewritten here changes *what the graph means on neuron*:

- ``native_dropout`` draws its mask exactly as eager neuron does (``bernoulli_`` of a bool tensor from the
  neuron generator) from a shape-only ``empty``: the random draw has no data inputs, so the partitioner hoists
  it in front of the compiled piece (RNG as an explicit input) and compiled dropout equals eager dropout bit
  for bit under the same seed.
- the ``*_overrideable`` fused attention ops neuron's SDPA choice produces become the CPU flash-attention
  ops eager neuron runs for them, which the lowering knows.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _native_dropout(input: torch.Tensor, p: float, train: bool | None):
    if train is not None and not train:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    keep = 1.0 - p
    scale = 0.0 if keep == 0.0 else 1.0 / keep
    mask = aten.empty.memory_format(list(input.shape), dtype=torch.bool, device=input.device)
    mask = aten.bernoulli.p(mask, keep)
    return aten.mul.Scalar(aten.mul.Tensor(input, mask), scale), mask


def _fused_attention(query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False, return_debug_mask=False,
                     scale=None):
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu.default(
        query, key, value, dropout_p, is_causal, attn_mask=attn_bias, scale=scale)
    unused = query.new_empty((0,), dtype=torch.long)
    return (out, lse, unused, unused, query.shape[-2], key.shape[-2], query.new_empty((), dtype=torch.long),
            query.new_empty((), dtype=torch.long), query.new_empty((0,)))


def _fused_attention_backward(grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp, cum_seq_q,
                              cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, scale=None):
    mask = attn_bias if attn_bias is not None and attn_bias.numel() > 0 else None
    gq, gk, gv = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=mask, scale=scale)
    return gq, gk, gv, None


def table() -> dict:
    return {
        aten.native_dropout.default: _native_dropout,
        aten._scaled_dot_product_fused_attention_overrideable.default: _fused_attention,
        aten._scaled_dot_product_fused_attention_overrideable_backward.default: _fused_attention_backward,
    }
