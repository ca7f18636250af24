"""cumprod and cummax/cummin as log-step scans; logcumsumexp without overflow."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..decomp_common import arange
from ._common import _along, _scan

aten = torch.ops.aten


def _cumprod(self, dim, *, dtype=None):
    """cumprod as a log-step scan of products (torch-mlir has no cumprod lowering). Integer and bool inputs
    accumulate in int64, as in PyTorch."""
    if dtype is not None:
        self = self.to(dtype)
    elif not self.is_floating_point() and not self.is_complex():
        self = self.to(torch.int64)
    if self.dim() == 0:
        return self.clone()
    dim = dim % self.dim()
    return _scan((self,), dim, lambda a, b: (a[0] * b[0],))[0]


def _cum_extreme(take_right: Callable) -> Callable:
    """cummax / cummin as a scan over (value, index) pairs. ``take_right(right, left)`` (``>=`` / ``<=``) says
    when the later element wins, so ties go to the later index; a NaN wins over everything after it until
    the next NaN (PyTorch's rule: the value stays NaN, the index is the last NaN's)."""

    def combine(left, right):
        (lv, li), (rv, ri) = left, right
        if lv.is_floating_point():
            right_wins = torch.isnan(rv) | (~torch.isnan(lv) & take_right(rv, lv))
        else:
            right_wins = take_right(rv, lv)
        return torch.where(right_wins, rv, lv), torch.where(right_wins, ri, li)

    def decomp(self, dim):
        if self.dim() == 0:
            return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
        dim = dim % self.dim()
        idx = _along(arange(self.shape[dim], self.device), dim, self.dim()).expand(self.shape)
        values, indices = _scan((self, idx), dim, combine)
        return values, indices.clone()

    return decomp


def _logcumsumexp(x, dim):
    """log(cumsum(exp(x - m))) + m with m the (finite) maximum along ``dim``; torch-mlir's own lowering
    overflows to inf."""
    if x.dim() == 0:
        return NotImplemented
    m = aten.amax.default(x, [dim], True)
    m = aten.where.self(aten.isfinite.default(m), m, aten.zeros_like.default(m))
    return aten.add.Tensor(aten.log.default(aten.cumsum.default(aten.exp.default(aten.sub.Tensor(x, m)), dim)), m)
