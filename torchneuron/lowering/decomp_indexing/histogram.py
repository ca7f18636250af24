"""histc, histogram and histogramdd as one ``scatter_add`` over flat bin indices."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..decomp_common import arange
from .search import _binary_search


def _linspace(start, end, steps: int):
    """PyTorch's CPU linspace for tensor endpoints (0-d, in the output dtype): the first half counts up from
    ``start``, the second half down from ``end``, so both ends are exact."""
    i = arange(steps, start.device).to(start.dtype)
    step = (end - start) / (steps - 1)
    up = start + step * i
    down = end - step * (steps - 1 - i)
    return torch.where(arange(steps, start.device) < steps // 2, up, down)


def _outer_edges(x2d, range_, pad: float):
    """Per-column (leftmost, rightmost) edges, 0-d tensors in x's dtype: ``range_`` pairs if given, else the
    column's min and max ([0, 1] for an empty input); an empty interval is widened by ``pad`` on each side
    (one rounding of the exact value either way, as PyTorch's double arithmetic then cast)."""
    def const(v):
        return torch.full((), v, dtype=x2d.dtype, device=x2d.device)

    edges = []
    for d in range(x2d.shape[1]):
        if range_ is not None or x2d.shape[0] == 0:
            lo, hi = (float(range_[2 * d]), float(range_[2 * d + 1])) if range_ is not None else (0.0, 1.0)
            if lo == hi:
                lo, hi = lo - pad, hi + pad
            edges.append((const(lo), const(hi)))
            continue
        col = x2d[:, d]
        lo, hi = col.amin(), col.amax()
        same = lo == hi
        edges.append((torch.where(same, lo - pad, lo), torch.where(same, hi + pad, hi)))
    return edges


def _histogramdd(x2d, edges: list, weight, density: bool, bin_of: Callable):
    """Counts (or weight sums) of the rows of ``x2d`` (M, N) in the grid of per-column ``edges``: elements
    outside [first, last edge] (and NaN) are dropped, the last bin includes its right edge, and the flat
    bin index is accumulated with one ``scatter_add`` (dropped rows go to a dummy slot). ``bin_of(column,
    edges, d)`` gives the bin before the right-edge fix. ``density`` divides by the total and the bin sizes."""
    counts = [e.shape[0] - 1 for e in edges]
    total = math.prod(counts)
    m = x2d.shape[0]
    flat = torch.zeros(m, dtype=torch.int64, device=x2d.device)
    keep = torch.ones(m, dtype=torch.bool, device=x2d.device)
    for d, e in enumerate(edges):
        col = x2d[:, d]
        keep = keep & (col >= e[0]) & (col <= e[-1])
        pos = bin_of(col, e, d)
        pos = torch.where(pos >= counts[d], torch.full_like(pos, counts[d] - 1), pos).clamp(min=0)
        flat = flat * counts[d] + pos
    flat = torch.where(keep, flat, torch.full_like(flat, total))
    w = torch.ones(m, dtype=x2d.dtype, device=x2d.device) if weight is None else weight.reshape(-1).to(x2d.dtype)
    hist = torch.zeros(total + 1, dtype=x2d.dtype, device=x2d.device).scatter_add(0, flat, w)[:total]
    hist = hist.reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * len(counts)
            shape[d] = counts[d]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist


def _upper_bound_bin(col, e, d):
    """Bin by comparison with the edges themselves (the last edge <= x), as PyTorch's binary / local search."""
    return _binary_search(e, col, right=True) - 1


def _histc(self, bins=100, min=0, max=0):
    """histc: bins by PyTorch's linear interpolation, (x - lo) * bins / (hi - lo) truncated, in x's dtype; the
    interval is [min, max], or the data's range when min == max (widened by 1 if still empty)."""
    x = self.reshape(-1, 1)
    if min != max:
        pair = _outer_edges(x, [float(min), float(max)], 1.0)
    else:
        pair = _outer_edges(x, None if self.numel() > 0 else [float(min), float(max)], 1.0)
    lo, hi = pair[0]
    edges = _linspace(lo, hi, bins + 1)

    def interpolate(col, e, d):
        return torch.trunc((col - e[0]) * bins / (e[-1] - e[0])).to(torch.int64)

    return _histogramdd(x, [edges], None, False, interpolate)


def _histogram_bin_ct(self, bins=100, *, range=None, weight=None, density=False):
    x = self.reshape(-1, 1)
    lo, hi = _outer_edges(x, range, 0.5)[0]
    edges = _linspace(lo, hi, bins + 1)
    return _histogramdd(x, [edges], weight, density, _upper_bound_bin), edges


def _histogram_bins_tensor(self, bins, *, weight=None, density=False):
    x = self.reshape(-1, 1)
    edges = bins.to(self.dtype)
    return _histogramdd(x, [edges], weight, density, _upper_bound_bin), edges.clone()


def _histogramdd_bin_edges(self, bins, *, range=None, weight=None, density=False):
    x = self.reshape(-1, self.shape[-1])
    return [_linspace(lo, hi, b + 1) for (lo, hi), b in zip(_outer_edges(x, range, 0.5), bins)]


def _histogramdd_from_bin_cts(self, bins, *, range=None, weight=None, density=False):
    x = self.reshape(-1, self.shape[-1])
    edges = _histogramdd_bin_edges(self, bins, range=range)
    return _histogramdd(x, edges, weight, density, _upper_bound_bin)


def _histogramdd_from_bin_tensors(self, bins, *, weight=None, density=False):
    x = self.reshape(-1, self.shape[-1])
    return _histogramdd(x, [b.to(self.dtype) for b in bins], weight, density, _upper_bound_bin)
