"""diagonal_scatter and as_strided_scatter without writes through views."""

from __future__ import annotations

import torch

from ..decomp_common import arange
from ._common import _along

aten = torch.ops.aten


def _diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter as a ``where`` over the diagonal's positions, reading ``src`` at each position's
    diagonal index (PyTorch's decomposition writes through a view, which functionalization cannot remove)."""
    nd = self.dim()
    dim1, dim2 = dim1 % nd, dim2 % nd
    n1, n2 = self.shape[dim1], self.shape[dim2]
    length = src.shape[-1]
    if length == 0:
        return self.clone()
    a = arange(n1, self.device).reshape(n1, 1)
    b = arange(n2, self.device).reshape(1, n2)
    on = (b - a) == offset
    diag_index = (a if offset >= 0 else b).expand(n1, n2).clamp(0, length - 1)
    g = src.to(self.dtype).index_select(-1, diag_index.reshape(-1)).reshape(list(src.shape[:-1]) + [n1, n2])
    g = g.movedim([-2, -1], [dim1, dim2])
    mask = on.reshape([1] * (nd - 2) + [n1, n2]).movedim([-2, -1], [dim1, dim2])
    return torch.where(mask, g, self)


def _storage_order(t) -> list[int]:
    """The dim order in which a clone of ``t`` lays out its storage: by decreasing stride when ``t`` is
    non-overlapping and dense (``clone`` keeps such strides), else row-major (``clone`` makes it contiguous)."""
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    expected = 1
    for d in reversed(order):
        if t.shape[d] != 1 and t.stride(d) != expected:
            return list(range(t.dim()))
        expected *= t.shape[d]
    return order


def _as_strided_scatter(self, src, size, stride, storage_offset=None):
    """as_strided_scatter as an ``index_put`` into the flattened storage: the strided view's storage positions
    are offset + sum(i_k * stride_k), built from aranges. A non-contiguous (dense) ``self`` is handled in its
    storage order, like the clone the op writes into. Overlapping views (a stride 0 with size > 1) write
    one element several times; which write wins is unspecified, as in PyTorch."""
    offset = storage_offset or 0
    order = _storage_order(self)
    base = self.permute(order) if order != list(range(self.dim())) else self
    flat = base.reshape(-1)
    if src.numel() == 0:
        return self.clone()
    pos = torch.full(list(size), offset, dtype=torch.int64, device=self.device)
    for d, (n, st) in enumerate(zip(size, stride)):
        pos = pos + _along(arange(n, self.device), d, len(size)) * st
    out = aten.index_put.default(flat, [pos.reshape(-1)], src.to(self.dtype).reshape(-1), False)
    out = out.reshape(base.shape)
    if base is self:
        return out
    inverse = [order.index(d) for d in range(self.dim())]
    return out.permute(inverse).clone()
