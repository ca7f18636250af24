"""``nki_ops::softmax`` (+ backward): softmax over the last dim."""

from __future__ import annotations

import torch

from torchneuron.custom_ops import nki_op

from .. import softmax as kernels
from ._common import rows


@nki_op("nki_ops::softmax", mutates_args=())
def _softmax(x: torch.Tensor) -> torch.Tensor:
    return kernels.softmax_kernel(rows(x)).view(x.shape)


@nki_op("nki_ops::softmax_backward", mutates_args=())
def _softmax_bwd(dy: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return kernels.softmax_bwd_kernel(rows(dy.contiguous()), rows(y)).view(y.shape)


def _setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(output)


def _backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return _softmax_bwd(dy, y)


_softmax.register_autograd(_backward, setup_context=_setup)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``torch.softmax(x, dim=-1)`` on the NKI kernel (rows on partitions, so only the last dim)."""
    if dim not in (-1, x.dim() - 1):
        raise ValueError(f"nki_ops.softmax reduces over the last dim only, got dim={dim} for a {x.dim()}-d input; "
                         "move the dim last first (x.transpose(dim, -1)).")
    return _softmax(x)


def reference_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.to(torch.promote_types(x.dtype, torch.float32)), -1).to(x.dtype)
