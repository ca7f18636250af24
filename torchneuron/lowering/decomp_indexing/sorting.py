"""Sort-based selection: a stable NaN-last sort (``_stable_sort_last``) and the stable ascending ``sort``
built on it, mode, nanmedian, median and kthvalue."""

from __future__ import annotations

import math

import torch

from ..decomp_common import arange
from ._common import _scan

aten = torch.ops.aten


def _stable_sort_last(x):
    """(values, indices) of ``x`` sorted ascending along the last dim, equal values in index order, NaNs
    last (PyTorch's order). torch-mlir's sort is unstable and its comparator mishandles NaN, so: sort a
    NaN-free key, then sort the unique integer key (group of equal keys, is-NaN, original index), whose
    order is total, to put each group of ties in index order."""
    n = x.shape[-1]
    isnan = torch.isnan(x) if x.is_floating_point() else None
    key = x.to(torch.int32) if x.dtype == torch.bool else x
    if isnan is not None:
        key = torch.where(isnan, torch.full_like(x, math.inf), x)
    ksorted, perm = torch.sort(key, -1)
    first = torch.ones(list(x.shape[:-1]) + [1], dtype=torch.bool, device=x.device)
    starts = torch.cat([first, ksorted[..., 1:] != ksorted[..., :-1]], -1)
    group = torch.cumsum(starts.to(torch.int64), -1) - 1
    nan_rank = isnan.gather(-1, perm).to(torch.int64) if isnan is not None else 0
    _, order = torch.sort(group * (2 * n) + nan_rank * n + perm, -1)
    perm = perm.gather(-1, order)
    return x.gather(-1, perm), perm


def _keep(t, keepdim: bool, dim: int):
    """A last-dim reduction result of shape [..., 1] moved back to ``dim`` (kept or squeezed)."""
    return t.movedim(-1, dim) if keepdim else t.squeeze(-1)


def _mode(self, dim=-1, keepdim=False):
    """mode: the value with the longest run in a stable sort; among equally long runs the smallest value
    (PyTorch keeps the first longest run), and the index of that value's last occurrence (the run's end,
    as PyTorch reports it). Run lengths come from a max-scan of run start positions."""
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    x = self.movedim(dim, -1)
    n = x.shape[-1]
    if n == 0:
        shape = list(x.shape[:-1]) + [1]
        return (_keep(torch.zeros(shape, dtype=self.dtype, device=self.device), keepdim, dim),
                _keep(torch.zeros(shape, dtype=torch.int64, device=self.device), keepdim, dim))
    values, perm = _stable_sort_last(x)
    k = arange(n, self.device).expand(values.shape)
    no = torch.zeros(list(x.shape[:-1]) + [1], dtype=torch.bool, device=self.device)
    same_prev = torch.cat([no, values[..., 1:] == values[..., :-1]], -1)
    same_next = torch.cat([values[..., 1:] == values[..., :-1], no], -1)
    (run_start,) = _scan((torch.where(same_prev, torch.zeros_like(k), k),), x.dim() - 1,
                         lambda a, b: (torch.maximum(a[0], b[0]),))
    run_len = k - run_start + 1
    # one integer score per run end: longer runs first, then earlier (smaller) values
    score = torch.where(same_next, torch.zeros_like(k), run_len * (n + 1) + (n - k))
    best = score.amax(-1, keepdim=True)
    at = n - (best - torch.div(best, n + 1, rounding_mode="floor") * (n + 1))
    return _keep(values.gather(-1, at), keepdim, dim), _keep(perm.gather(-1, at), keepdim, dim)


def _introselect_first_of_equivalent(n: int) -> int:
    """Which of n mutually equivalent elements ``std::nth_element(first, first, last)`` (libstdc++'s
    introselect: median-of-three pivot, unguarded partition, insertion sort below 4) leaves in front.
    PyTorch's nanmedian reports that index for an all-NaN slice, as all NaNs compare equivalent."""
    a = list(range(n))
    first, last = 0, n
    while last - first > 3:
        mid = first + (last - first) // 2
        a[first], a[mid] = a[mid], a[first]  # every comparison is false: the "median" is the middle one
        lo, hi = first + 1, last
        while True:  # nothing compares less, so the partition swaps pairwise from both ends
            hi -= 1
            if lo >= hi:
                break
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1
        if lo <= 0:
            first = lo
        else:
            last = lo
    return a[0]


def _nanmedian_dim(self, dim=-1, keepdim=False):
    """nanmedian along a dim: the lower median of the non-NaN values, picked from a stable NaN-last sort
    (ties resolve to the smallest index, as PyTorch's comparator does); NaN for an all-NaN slice, with the
    index PyTorch's nth_element leaves there."""
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    x = self.movedim(dim, -1)
    values, perm = _stable_sort_last(x)
    if x.is_floating_point():
        count = (~torch.isnan(x)).to(torch.int64).sum(-1, keepdim=True)
    else:
        count = torch.full(list(x.shape[:-1]) + [1], x.shape[-1], dtype=torch.int64, device=x.device)
    at = torch.div(count - 1, 2, rounding_mode="floor").clamp(min=0)
    index = perm.gather(-1, at)
    if x.is_floating_point() and x.shape[-1] > 0:
        all_nan = torch.full_like(index, _introselect_first_of_equivalent(x.shape[-1]))
        index = torch.where(count == 0, all_nan, index)
    return _keep(values.gather(-1, at), keepdim, dim), _keep(index, keepdim, dim)


def _nanmedian(self):
    if self.numel() == 0:
        return NotImplemented
    return _nanmedian_dim(self.reshape(-1), 0)[0]


def _kthvalue(x, k, dim=-1, keepdim=False):
    """k-th smallest via a stable sort (torch-mlir has no kthvalue lowering)."""
    if x.dim() == 0:
        return NotImplemented
    values, indices = aten.sort.stable(x, stable=True, dim=dim)
    v = aten.select.int(values, dim, k - 1)
    i = aten.select.int(indices, dim, k - 1)
    if keepdim:
        v, i = aten.unsqueeze.default(v, dim), aten.unsqueeze.default(i, dim)
    return v, i


def _median_dim(x, dim=-1, keepdim=False):
    if x.dim() == 0:
        return NotImplemented
    return _kthvalue(x, (x.shape[dim] - 1) // 2 + 1, dim, keepdim)


def _median(x):
    if x.numel() == 0:
        return NotImplemented
    flat = aten.reshape.default(x, [-1])
    return _kthvalue(flat, (flat.shape[0] - 1) // 2 + 1, 0, False)[0]


def _stable_sort_ascending(x, *, stable=None, dim=-1, descending=False):
    """torch-mlir lowers ``sort`` unstably with a comparator that mishandles NaN: a stable ascending sort is
    built from sorts it does lower (NaN last, ties in index order, as PyTorch); descending keeps the plain
    sort."""
    if descending or x.dim() == 0:
        return aten.sort.default(x, dim, descending)
    moved = x.movedim(dim, -1)
    values, indices = _stable_sort_last(moved)
    return values.movedim(-1, dim), indices.movedim(-1, dim)
