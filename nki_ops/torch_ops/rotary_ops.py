"""``nki_ops::rotary`` (+ backward): rotary position embedding, rotate-half form."""

from __future__ import annotations

import torch

from torchneuron.custom_ops import nki_op

from .. import rotary as kernels


@nki_op("nki_ops::rotary", mutates_args=())
def _rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    seq, d = x.shape[-2], x.shape[-1]
    return kernels.rotary_kernel(x.reshape(-1, seq, d), cos, sin, False).view(x.shape)


@nki_op("nki_ops::rotary_backward", mutates_args=())
def _rotary_bwd(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    seq, d = dy.shape[-2], dy.shape[-1]
    return kernels.rotary_kernel(dy.contiguous().reshape(-1, seq, d), cos, sin, True).view(dy.shape)


def _setup(ctx, inputs, output) -> None:
    _, cos, sin = inputs
    ctx.save_for_backward(cos, sin)


def _backward(ctx, dy):
    cos, sin = ctx.saved_tensors
    if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
        raise RuntimeError("nki_ops.rotary: cos and sin are treated as constants (no gradient); "
                           "pass them detached (cos.detach()).")
    return _rotary_bwd(dy, cos, sin), None, None


_rotary.register_autograd(_backward, setup_context=_setup)


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x * cos + rotate_half(x) * sin`` for x [..., seq, d] and cos/sin [seq, d] (d even)."""
    seq, d = x.shape[-2], x.shape[-1]
    if cos.shape != (seq, d) or sin.shape != (seq, d):
        raise ValueError(f"nki_ops.rotary: cos and sin must be [seq, d] = {(seq, d)}, got {tuple(cos.shape)} and "
                         f"{tuple(sin.shape)}.")
    if d % 2:
        raise ValueError(f"nki_ops.rotary: the head dim must be even, got {d}.")
    return _rotary(x, cos, sin)


def reference_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin
