"""Antialiased bilinear upsampling."""

from __future__ import annotations

import torch

from ..decomp_common import arange, zeros
from ._common import _acc_dtype, _cast

aten = torch.ops.aten


def _aa_weights(n_in: int, n_out: int, align_corners: bool, scale_arg, device):
    """[n_out, n_in] antialiased bilinear (triangle filter) weights, as PyTorch's separable CPU kernel
    computes them: the filter is stretched by the scale when downsampling, and each row is normalised.
    Every input position outside a row's window has zero filter weight, so no window bounds are needed."""
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_arg if scale_arg is not None and scale_arg > 0 else n_in / n_out
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    i = _cast(aten.unsqueeze.default(arange(n_out, device), 1), torch.float32)
    j = _cast(aten.unsqueeze.default(arange(n_in, device), 0), torch.float32)
    center = aten.mul.Tensor(aten.add.Tensor(i, 0.5), scale)
    x = aten.mul.Tensor(aten.add.Tensor(aten.sub.Tensor(j, center), 0.5), invscale)
    w = aten.clamp_min.default(aten.rsub.Scalar(aten.abs.default(x), 1.0), 0.0)
    return aten.div.Tensor(w, aten.sum.dim_IntList(w, [1], True))


def _upsample_bilinear2d_aa(x, output_size, align_corners, scales_h=None, scales_w=None):
    """Antialiased bilinear resize as two matmuls with static weight matrices (height, then width)."""
    oh, ow = output_size
    h, w = x.shape[-2:]
    if x.numel() == 0 or oh * ow == 0:
        return zeros(list(x.shape[:-2]) + [oh, ow], x.dtype, x.device)
    wh = _aa_weights(h, oh, align_corners, scales_h, x.device)
    ww = _aa_weights(w, ow, align_corners, scales_w, x.device)
    acc = _acc_dtype(x.dtype)
    y = aten.matmul.default(_cast(x, acc), aten.t.default(_cast(ww, acc)))   # [..., h, ow]
    y = aten.matmul.default(_cast(wh, acc), y)                              # [..., oh, ow]
    return _cast(y, x.dtype)
