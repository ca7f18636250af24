"""Decompositions applied while AOTAutograd traces, before partitioning.

Deliberately few: each lowered piece is decomposed again by the Neuron lowering table when it is traced for
StableHLO, and the op coverage table (which decides what runs eagerly) is keyed on the ops eager mode runs, so
the AOT graph keeps those ops. What is rewritten here changes *what the graph means on neuron*:

- ``native_dropout`` draws its mask exactly as eager neuron does (``bernoulli_`` of a bool tensor from the
  neuron generator) from a shape-only ``empty``: the random draw has no data inputs, so the partitioner hoists
  it in front of the compiled piece (RNG as an explicit input) and compiled dropout equals eager dropout bit
  for bit under the same seed.
- ``_foreach_*`` ops (what optimizers run on neuron, as on CUDA) become one ATen op per tensor, which the
  lowering knows: a compiled optimizer step is one program, not a piece run op by op. Overloads whose scalar
  operand is a tensor of per-tensor values (``_foreach_addcdiv.Tensor``) stay whole and run eagerly.
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
    return (out, lse, None, None, query.shape[-2], key.shape[-2], query.new_empty((), dtype=torch.long),
            query.new_empty((), dtype=torch.long), None)


def _fused_attention_backward(grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp, cum_seq_q,
                              cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, scale=None):
    mask = attn_bias if attn_bias is not None and attn_bias.numel() > 0 else None
    gq, gk, gv = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=mask, scale=scale)
    return gq, gk, gv, None


_FOREACH_OVERLOADS = ("default", "List", "Scalar", "ScalarList", "ScalarAndTensor", "Tensor")


def _per_tensor(foreach, base):
    """``_foreach_op(lists..., scalars...)`` → ``[op(list_0[i], list_1[i], ..., scalars...)]``. An argument
    the single-tensor op takes by keyword only (``addcmul``'s ``value``) is passed by that keyword."""
    names = [a.name for a in foreach._schema.arguments]
    keyword_only = {a.name for ov in base.overloads() for a in getattr(base, ov)._schema.arguments if a.kwarg_only}

    def decomposed(*args, **kwargs):
        bound = dict(zip(names, args)) | kwargs
        n = next(len(v) for v in bound.values() if isinstance(v, (list, tuple)))

        def pick(a, i):
            return a[i] if isinstance(a, (list, tuple)) else a

        out = []
        for i in range(n):
            pos = [pick(v, i) for k, v in bound.items() if k not in keyword_only]
            kw = {k: pick(v, i) for k, v in bound.items() if k in keyword_only}
            out.append(base(*pos, **kw))
        return out

    return decomposed


def _foreach_norm(tensors, ord=2, dtype=None):
    return [aten.linalg_vector_norm.default(t, ord, dtype=dtype) for t in tensors]


def _foreach_table() -> dict:
    out = {}
    for name in dir(aten):
        if not name.startswith("_foreach_") or name.endswith("_"):
            continue
        base = getattr(aten, name.removeprefix("_foreach_"), None)
        if base is None:
            continue
        packet = getattr(aten, name)
        for overload in packet.overloads():
            if overload not in _FOREACH_OVERLOADS:
                continue
            ov = getattr(packet, overload)
            if overload == "Tensor" and name in ("_foreach_addcmul", "_foreach_addcdiv"):
                continue  # a tensor of per-tensor scalars: no single-tensor overload takes one
            out[ov] = _per_tensor(ov, base)
    out[aten._foreach_norm.Scalar] = _foreach_norm
    return out


def table() -> dict:
    return {
        **_foreach_table(),
        aten.native_dropout.default: _native_dropout,
        aten._scaled_dot_product_fused_attention_overrideable.default: _fused_attention,
        aten._scaled_dot_product_fused_attention_overrideable_backward.default: _fused_attention_backward,
    }
