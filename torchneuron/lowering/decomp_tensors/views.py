"""Views and their copies in a value-semantic IR: strides never matter, out-of-place ``X_copy`` ops are the
view plus a clone, and the slice shapes torch-mlir mis-sizes are built directly."""

from __future__ import annotations

from collections.abc import Callable

import torch

aten = torch.ops.aten


def _view_any_strides(x, size):
    """``view`` on a non-contiguous tensor: in a value-semantic IR a view is a reshape. Retracing a graph
    (an AOTAutograd backward) with other decompositions can give intermediates other strides than the ones
    its ``view`` calls assumed, so views never depend on strides here."""
    if x.is_contiguous():
        return NotImplemented
    return aten._unsafe_view.default(aten.clone.default(x, memory_format=torch.contiguous_format), size)


def _copy_of_view(view_op: torch._ops.OpOverload) -> Callable:
    """``X_copy`` (the out-of-place form of a view op) as the view followed by a clone, which lowers;
    PyTorch decomposes these to ``prims.clone``, which torch-mlir does not know."""
    def decomp(*args, **kwargs):
        out = view_op(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            return aten.clone.default(out)
        return [aten.clone.default(o) for o in out]
    return decomp


def _copy_ops() -> dict:
    table = {}
    for name in dir(aten):
        if not name.endswith("_copy") or name.startswith("_"):
            continue
        base = getattr(aten, name.removesuffix("_copy"), None)
        packet = getattr(aten, name, None)
        if base is None or packet is None:
            continue
        for ov in packet.overloads():
            if ov == "out" or ov.endswith("_out") or not hasattr(base, ov):
                continue
            table[getattr(packet, ov)] = _copy_of_view(getattr(base, ov))
    return table


def _slice_bounds(size: int, start, end) -> tuple[int, int]:
    """PyTorch's slice bounds: None means the whole dim, negatives count from the end, then clamped to
    [0, size] with end >= start."""
    lo = 0 if start is None else (start + size if start < 0 else start)
    hi = size if end is None else (end + size if end < 0 else end)
    lo = min(max(lo, 0), size)
    return lo, min(max(hi, lo), size)


def _slice(x, dim=0, start=None, end=None, step=1):
    """A zero-length ``slice`` is mis-sized by torch-mlir ('stablehlo.slice' inferred type mismatch): it is an
    empty tensor of the right shape. Other slices are torch-mlir's own."""
    lo, hi = _slice_bounds(x.shape[dim], start, end)
    if hi > lo:
        return NotImplemented
    shape = list(x.shape)
    shape[dim] = 0
    return torch.zeros(shape, dtype=x.dtype, device=x.device)


def _slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    """torch-mlir lowers ``slice_scatter`` with an out-of-range bound (``end=INT64_MAX``, which every
    ``x[1:]`` backward passes through ``slice_backward``) into a program that needs tens of GiB to compile.
    The bounds are clamped first, as PyTorch does; an in-range call is torch-mlir's own."""
    lo, hi = _slice_bounds(x.shape[dim], start, end)
    if (start, end) == (lo, hi):
        return NotImplemented
    return aten.slice_scatter.default(x, src, dim, lo, hi, step)
