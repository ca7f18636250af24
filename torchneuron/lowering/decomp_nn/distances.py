"""Pairwise distances: condensed (``pdist``) and between two sets (``cdist``)."""

from __future__ import annotations

import torch

from ..decomp_common import arange, zeros
from ._common import _cast

aten = torch.ops.aten


def _pdist(x, p=2.0):
    """Condensed pairwise distances (rows i < j, row-major): the pair list is static, so the rows of every
    pair are gathered with index tensors computed from N and reduced as in ``torch.cdist``."""
    n, m = x.shape
    pairs = n * (n - 1) // 2
    if pairs == 0 or m == 0:
        return zeros([pairs], x.dtype, x.device)
    # pair t belongs to the row i with f(i) <= t < f(i+1), f(i) = i*n - i*(i+1)/2 pairs before row i;
    # counting the rows whose first pair is <= t finds i without any data-dependent step
    t = aten.unsqueeze.default(arange(pairs, x.device), 1)
    rows = aten.unsqueeze.default(aten.arange.start_step(1, n, 1, dtype=torch.int64, device=x.device), 0)
    firsts = aten.sub.Tensor(aten.mul.Tensor(rows, n), aten.div.Tensor_mode(
        aten.mul.Tensor(rows, aten.add.Tensor(rows, 1)), 2, rounding_mode="floor"))
    i = aten.sum.dim_IntList(_cast(aten.le.Tensor(firsts, t), torch.int64), [1])
    first_of_i = aten.sub.Tensor(aten.mul.Tensor(i, n), aten.div.Tensor_mode(
        aten.mul.Tensor(i, aten.add.Tensor(i, 1)), 2, rounding_mode="floor"))
    j = aten.add.Tensor(aten.sub.Tensor(aten.squeeze.dim(t, 1), first_of_i), aten.add.Tensor(i, 1))
    diff = aten.sub.Tensor(aten.index_select.default(x, 0, i), aten.index_select.default(x, 0, j))
    a = aten.abs.default(diff)
    if p == 0:
        return aten.sum.dim_IntList(_cast(aten.ne.Scalar(a, 0), x.dtype), [-1])
    if p == float("inf"):
        return aten.amax.default(a, [-1])
    if p == 1:
        return aten.sum.dim_IntList(a, [-1])
    if p == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(diff, diff), [-1]))
    return aten.pow.Tensor_Scalar(aten.sum.dim_IntList(aten.pow.Tensor_Scalar(a, p), [-1]), 1.0 / p)


def _cdist(x1, x2, p, compute_mode=None):
    """Pairwise p-norm distances by broadcasting (torch-mlir has no ``_cdist_forward``)."""
    d = aten.sub.Tensor(aten.unsqueeze.default(x1, -2), aten.unsqueeze.default(x2, -3))
    a = aten.abs.default(d)
    if p == 0:
        return aten.sum.dim_IntList(aten._to_copy.default(aten.ne.Scalar(a, 0), dtype=x1.dtype), [-1])
    if p == float("inf"):
        return aten.amax.default(a, [-1])
    if p == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(d, d), [-1]))
    if p == 1:
        return aten.sum.dim_IntList(a, [-1])
    return aten.pow.Tensor_Scalar(aten.sum.dim_IntList(aten.pow.Tensor_Scalar(a, p), [-1]), 1.0 / p)
