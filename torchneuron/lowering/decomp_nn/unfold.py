"""im2col (``F.unfold``) and ``Tensor.unfold`` as gathers at static window positions."""

from __future__ import annotations

import torch

from ..decomp_common import arange, int_list, zeros
from ._common import _select_along, _size_at

aten = torch.ops.aten


def _im2col(x, kernel_size, dilation, padding, stride):
    """``unfold`` (im2col): zero-pad, gather every block row/column at static positions, and lay the
    kernel offsets out as channels; PyTorch's own decomposition leaves an in-place copy after
    functionalization."""
    k, d, p, s = int_list(kernel_size, 2), int_list(dilation, 2), int_list(padding, 2), int_list(stride, 2)
    batched = x.dim() == 4
    if not batched:
        x = aten.unsqueeze.default(x, 0)
    n, c, h, w = x.shape
    outs = [(size + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i, size in enumerate((h, w))]
    if x.numel() == 0:
        out = zeros([n, c * k[0] * k[1], outs[0] * outs[1]], x.dtype, x.device)
        return out if batched else aten.squeeze.dim(out, 0)
    xp = aten.constant_pad_nd.default(x, [p[1], p[1], p[0], p[0]], 0.0)
    pos = []
    for i in range(2):  # [K_i, O_i]: kernel offset major, as im2col's channel layout wants
        j = aten.unsqueeze.default(arange(k[i], x.device), 1)
        o = aten.unsqueeze.default(arange(outs[i], x.device), 0)
        pos.append(aten.add.Tensor(aten.mul.Tensor(j, d[i]), aten.mul.Tensor(o, s[i])))
    y = _select_along(xp, 2, pos[0])          # n, c, kh, oh, W
    y = _select_along(y, 4, pos[1])           # n, c, kh, oh, kw, ow
    y = aten.permute.default(y, [0, 1, 2, 4, 3, 5])
    out = aten.reshape.default(y, [n, c * k[0] * k[1], outs[0] * outs[1]])
    return out if batched else aten.squeeze.dim(out, 0)


def _unfold_copy(x, dimension, size, step):
    """``Tensor.unfold`` as a copy: gather the windows along ``dimension`` ([n_windows, size] positions)
    and move the window dim last; torch-mlir crashes on the view form."""
    if x.dim() == 0:
        return aten.reshape.default(aten.clone.default(x), [size])
    dim = dimension % x.dim()
    count = (x.shape[dim] - size) // step + 1
    if x.numel() == 0 or count * size == 0:
        shape = _size_at(x, dim, count) + [size]
        return zeros(shape, x.dtype, x.device)
    o = aten.unsqueeze.default(arange(count, x.device), 1)
    j = aten.unsqueeze.default(arange(size, x.device), 0)
    y = _select_along(x, dim, aten.add.Tensor(aten.mul.Tensor(o, step), j))
    return aten.movedim.int(y, dim + 1, -1)
