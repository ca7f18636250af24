"""``nki_ops::causal_attention`` (+ backward): causal scaled-dot-product attention, flash-style."""

from __future__ import annotations

import math

import torch

from torchneuron.custom_ops import nki_op

from .. import attention as kernels
from ._common import check_same_dtype


@nki_op("nki_ops::causal_attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return kernels.flash_attention_fwd_kernel(q, k, v, scale)


@nki_op("nki_ops::causal_attention_backward", mutates_args=())
def _attention_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, dout: torch.Tensor,
                   lse: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return kernels.flash_attention_bwd_kernel(q, k, v, out, dout.contiguous(), lse, scale)


def _setup(ctx, inputs, output) -> None:
    q, k, v, scale = inputs
    ctx.scale = scale
    ctx.save_for_backward(q, k, v, output[0], output[1])


def _backward(ctx, dout, _dlse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = _attention_bwd(q, k, v, out, dout, lse, ctx.scale)
    return dq, dk, dv, None


_attention.register_autograd(_backward, setup_context=_setup)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """``F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)`` for [..., seq, d] inputs of one
    shape (d <= 128; no dropout, no extra mask)."""
    check_same_dtype("causal_attention", q=q, k=k, v=v)
    if q.shape != k.shape or q.shape != v.shape or q.dim() < 3:
        raise ValueError(f"nki_ops.causal_attention takes q, k, v of one shape [..., seq, d], got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}.")
    seq, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    fold = (-1, seq, d)
    out = _attention(q.reshape(fold), k.reshape(fold), v.reshape(fold), scale)[0]
    return out.view(q.shape)


def reference_causal_attention(q, k, v, scale=None):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
