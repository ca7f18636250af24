"""segment_reduce as a bisection of positions into segment offsets and a scatter reduction."""

from __future__ import annotations

import math

import torch

from ..decomp_common import arange
from .scatter import _scatter_reduce
from .search import _binary_search


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False,
                    initial=None):
    """segment_reduce: each element's segment is an upper-bound search of its position in the segment
    offsets (lengths are turned into offsets by a cumsum); then a scatter reduction into one slot per
    segment (plus a dropped slot for positions past the last segment), starting from ``initial`` or the
    reduction's identity. 'mean' divides by the segment length; an empty segment keeps ``initial``, or is
    NaN without one (PyTorch's results)."""
    if offsets is None:
        if lengths is None:
            return NotImplemented
        zero = torch.zeros(list(lengths.shape[:-1]) + [1], dtype=lengths.dtype, device=lengths.device)
        offsets = torch.cat([zero, torch.cumsum(lengths, -1).to(lengths.dtype)], -1)
    offsets = offsets.to(torch.int64)
    axis = axis % data.dim()
    segments = offsets.shape[-1] - 1
    n = data.shape[axis]
    positions = arange(n, data.device).expand(list(offsets.shape[:-1]) + [n])
    seg = _binary_search(offsets[..., 1:], positions, right=True) if segments > 0 else torch.zeros_like(positions)
    seg = seg.reshape(list(seg.shape) + [1] * (data.dim() - axis - 1)).expand(data.shape)
    out_shape = list(data.shape)
    out_shape[axis] = segments + 1
    if data.is_floating_point():
        identity = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[reduce]
    else:
        info = torch.iinfo(data.dtype)
        identity = {"sum": 0, "mean": 0, "prod": 1, "max": info.min, "min": info.max}[reduce]
    start = torch.full(out_shape, identity if initial is None else initial, dtype=data.dtype, device=data.device)
    if reduce in ("sum", "mean"):
        out = start.scatter_add(axis, seg, data)
    else:
        op = {"prod": "prod", "max": "amax", "min": "amin"}[reduce]
        out = _scatter_reduce(start, axis, seg, data, op, include_self=True)
    out = out.narrow(axis, 0, segments)
    if reduce == "mean":
        length = (offsets[..., 1:] - offsets[..., :-1]).to(data.dtype)
        length = length.reshape(list(length.shape) + [1] * (data.dim() - axis - 1))
        empty_value = out if initial is not None else torch.full_like(out, math.nan)
        out = torch.where(length > 0, out / torch.where(length > 0, length, torch.ones_like(length)), empty_value)
    return out
