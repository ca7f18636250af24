"""Reflection and replication padding."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..decomp_common import zeros
from ._common import _size_at

aten = torch.ops.aten


def _pad_nd(mode: str) -> Callable:
    """Reflection / replication padding of the last len(padding)/2 dims as slices (+ flips) concatenated
    around the input, one dim at a time (torch-mlir's own lowering fails on zero-size inputs). Negative
    padding crops, as in eager."""
    def decomp(x, padding):
        pads = list(padding)
        for i in range(len(pads) // 2):
            dim = x.dim() - 1 - i
            x = _pad_dim(x, dim, pads[2 * i], pads[2 * i + 1], mode)
        return x
    return decomp


def _pad_dim(x, dim: int, left: int, right: int, mode: str):
    n = x.shape[dim]
    if x.numel() == 0:
        shape = list(x.shape)
        shape[dim] = n + left + right
        return zeros(shape, x.dtype, x.device)
    middle = aten.slice.Tensor(x, dim, max(0, -left), n - max(0, -right))
    parts = []
    if left > 0:
        if mode == "reflect":  # x[left], ..., x[1]
            parts.append(aten.flip.default(aten.slice.Tensor(x, dim, 1, left + 1), [dim]))
        else:
            parts.append(aten.expand.default(aten.slice.Tensor(x, dim, 0, 1), _size_at(x, dim, left)))
    parts.append(middle)
    if right > 0:
        if mode == "reflect":  # x[n-2], ..., x[n-1-right]
            parts.append(aten.flip.default(aten.slice.Tensor(x, dim, n - 1 - right, n - 1), [dim]))
        else:
            parts.append(aten.expand.default(aten.slice.Tensor(x, dim, n - 1, n), _size_at(x, dim, right)))
    return aten.cat.default(parts, dim) if len(parts) > 1 else aten.clone.default(middle)
