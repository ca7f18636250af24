"""scatter_reduce, legacy scatter reductions and index_reduce on the flattened problem."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..decomp_common import arange
from ._common import _along, _scan


def _flat_targets(self_shape, dim: int, index: torch.Tensor) -> torch.Tensor:
    """Row-major flat position in ``self`` that each element of ``index`` addresses along ``dim`` (1-D)."""
    strides = [1] * len(self_shape)
    for d in range(len(self_shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * self_shape[d + 1]
    pos = index.to(torch.int64) * strides[dim]
    for d in range(index.dim()):
        if d != dim:
            pos = pos + _along(arange(index.shape[d], index.device), d, index.dim()) * strides[d]
    return pos.reshape(-1)


def _segment_reduce_flat(keys, values, size: int, op: Callable):
    """Reduce ``values`` (1-D) grouped by ``keys`` (1-D ints in [0, size)) with the associative ``op``: one
    value per slot, 0 in slots no key addresses."""
    sorted_keys, perm = torch.sort(keys)
    vals = values.index_select(0, perm)

    def combine(left, right):
        (lk, lv), (rk, rv) = left, right
        return rk, torch.where(lk == rk, op(lv, rv), rv)

    _, scanned = _scan((sorted_keys, vals), 0, combine)
    # the last element of each run holds the run's total; every other element is sent to slot `size`
    is_last = torch.cat([sorted_keys[1:] != sorted_keys[:-1], torch.ones(1, dtype=torch.bool, device=keys.device)])
    target = torch.where(is_last, sorted_keys, torch.full_like(sorted_keys, size))
    base = torch.zeros(size + 1, dtype=values.dtype, device=values.device)
    return base.scatter(0, target, scanned)[:size]


_SEGMENT_OPS = {"prod": torch.mul, "amax": torch.maximum, "amin": torch.minimum}


def _scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce (sum / prod / mean / amax / amin, with or without ``self``) on the flattened problem:
    sum and mean through ``scatter_add`` (which torch-mlir lowers), the others through
    ``_segment_reduce_flat``. Integer 'mean' divides with floor, as PyTorch does."""
    if self.dim() == 0:
        out = _scatter_reduce(self.reshape(1), 0, index.reshape(1), src.reshape(1), reduce, include_self=include_self)
        return out.reshape(())
    dim = dim % self.dim()
    if index.numel() == 0:
        return self.clone()
    for d in range(index.dim()):  # only the part of src that index covers takes part
        src = src.narrow(d, 0, index.shape[d])
    keys = _flat_targets(self.shape, dim, index)
    vals = src.reshape(-1).to(self.dtype)
    flat = self.reshape(-1)
    size = flat.shape[0]
    ones = torch.ones_like(vals)
    touched = torch.zeros(size, dtype=torch.int32, device=self.device).scatter_add(
        0, keys, torch.ones(keys.shape, dtype=torch.int32, device=self.device)) > 0
    if reduce in ("sum", "mean"):
        base = flat if include_self else torch.where(touched, torch.zeros_like(flat), flat)
        out = base.scatter_add(0, keys, vals)
        if reduce == "mean":
            count = (torch.ones_like(flat) if include_self else torch.zeros_like(flat)).scatter_add(0, keys, ones)
            count = torch.where(count == 0, torch.ones_like(count), count)
            if out.is_floating_point() or out.is_complex():
                out = out / count
            else:
                out = torch.div(out, count, rounding_mode="floor")
            # untouched slots keep self exactly (division by 1 already does; this keeps -0.0 / NaN bits too)
            out = torch.where(touched, out, flat)
    elif reduce in _SEGMENT_OPS:
        op = _SEGMENT_OPS[reduce]
        reduced = _segment_reduce_flat(keys, vals, size, op)
        out = torch.where(touched, op(flat, reduced) if include_self else reduced, flat)
    else:
        raise ValueError(f"scatter_reduce: unknown reduce {reduce!r}")
    return out.reshape(self.shape)


def _scatter_legacy_reduce(self, dim, index, src, reduce):
    """scatter(..., reduce='add' | 'multiply'): scatter_reduce including ``self``."""
    return _scatter_reduce(self, dim, index, src, {"add": "sum", "multiply": "prod"}[reduce], include_self=True)


def _scatter_value_reduce(self, dim, index, value, reduce):
    src = torch.full(index.shape, value, dtype=self.dtype, device=self.device)
    return _scatter_legacy_reduce(self, dim, index, src, reduce)


def _index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """index_reduce as scatter_reduce with the 1-D ``index`` broadcast over ``source`` along ``dim``."""
    if self.dim() == 0:
        return _index_reduce(self.reshape(1), 0, index.reshape(1), source.reshape(1), reduce,
                             include_self=include_self).reshape(())
    dim = dim % self.dim()
    if source.dim() == 0:
        source = source.reshape(1)
    idx = _along(index.reshape(-1).to(torch.int64), dim, source.dim()).expand(source.shape)
    return _scatter_reduce(self, dim, idx, source, reduce, include_self=include_self)
