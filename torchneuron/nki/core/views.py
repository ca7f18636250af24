"""Free views of an `NkiTensor` (current API methods and legacy tile methods): new shape/strides over the
same storage, never a copy. A view that cannot be expressed with strides becomes a gather view."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes
from ..errors import ERR_INVALID_ARG, ERR_MEMORY, ERR_OOB, ERR_SHAPE, fail
from . import data_dependence
from .buffers import SBUF, Storage
from .tensor import Bound, NkiTensor


def _shape_arg(shape: Any) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:
        if type(s) is not int:
            return tuple(int(s) for s in shape)
    return shape if type(shape) is tuple else tuple(shape)  # plain ints, the usual case: nothing to convert


def _dim(t: NkiTensor, dim: int) -> int:
    d = dim + t.ndim if dim < 0 else dim
    if not 0 <= d < t.ndim:
        raise fail(ERR_SHAPE, f"dimension {dim} out of range for tensor `{t.name}` of rank {t.ndim}.",
                   f"use a dimension in [-{t.ndim}, {t.ndim - 1}].")
    return d


def _new(t: NkiTensor, shape: tuple[int, ...], strides: tuple[int, ...], offset: int | None = None,
         pdim: int | None = 0) -> NkiTensor:
    return t.derive(shape, strides, t.offset if offset is None else offset, pdim)


def _gather(t: NkiTensor, index: np.ndarray) -> NkiTensor:
    return t.derive(index.shape, None, 0, 0, index=index)


def reshape(t: NkiTensor, *shape: Any) -> NkiTensor:
    new = _shape_arg(shape)
    if -1 in new:
        known = math.prod(s for s in new if s != -1)
        new = tuple(t.size // max(known, 1) if s == -1 else s for s in new)
    if math.prod(new) != t.size:
        raise fail(ERR_SHAPE, f"cannot reshape tensor `{t.name}` of shape {t.shape} ({t.size} elements) "
                   f"to {new} ({math.prod(new)} elements).", "keep the element count unchanged.")
    if t.index is not None:
        return _gather(t, t.index.reshape(new))
    strides = _reshaped_strides(t.shape, tuple(t.strides or ()), new)
    if strides is None:
        return _gather(t, t.offsets().reshape(new))
    return _new(t, new, strides, pdim=0)


_RESHAPED: dict[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], tuple[int, ...] | None] = {}


def _reshaped_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                      new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The element strides of `new` over a (shape, strides) view, or None when no strides express it.
    Depends on those three only, and kernels reshape the same tiles every launch: remembered."""
    key = (shape, strides, new)
    if key in _RESHAPED:
        return _RESHAPED[key]
    # Ask NumPy whether the strides allow a view, on a dummy array that is never read.
    dummy = as_strided(np.zeros(1, dtype=np.uint8), shape, strides)
    try:
        out: tuple[int, ...] | None = tuple(int(s) for s in np.reshape(dummy, new, copy=False).strides)
    except ValueError:
        out = None
    if len(_RESHAPED) < 4096:
        _RESHAPED[key] = out
    return out


def permute(t: NkiTensor, *dims: Any) -> NkiTensor:
    order = _shape_arg(dims)
    if sorted(_dim(t, d) for d in order) != list(range(t.ndim)):
        raise fail(ERR_SHAPE, f"permute{order} is not a permutation of the {t.ndim} dims of `{t.name}`.",
                   "name every dimension exactly once.")
    order = tuple(_dim(t, d) for d in order)
    if t.index is not None:
        return _gather(t, t.index.transpose(order))
    pdim = order.index(t.pdim) if t.pdim is not None else None
    strides = t.strides or ()
    return _new(t, tuple(t.shape[d] for d in order), tuple(strides[d] for d in order), pdim=pdim)


def slice_dim(t: NkiTensor, dim: int, start: int = 0, end: int | None = None, step: int = 1) -> NkiTensor:
    key: list[Any] = [slice(None)] * t.ndim
    key[_dim(t, dim)] = slice(start, end, step)
    return t[tuple(key)]


def select(t: NkiTensor, dim: int, index: Any) -> NkiTensor:
    """Pick one position on `dim` and drop it (an index tensor selects per partition: a gather)."""
    d = _dim(t, dim)
    if isinstance(index, NkiTensor):
        data_dependence.mark()
        idx = index.read().astype(np.int64).reshape(-1)
        bad = (idx < 0) | (idx >= t.shape[d])
        if bad.any():
            raise fail(ERR_OOB, f"Out-of-bound access for tensor `{t.name}` on dimension {d}: index range "
                       f"[{idx.min()}, {idx.max()}] exceed dimension size of {t.shape[d]}.", "clamp the indices.")
        offs = np.moveaxis(t.offsets(), d, -1)
        lead = offs.shape[0]
        if idx.size not in (1, lead):
            raise fail(ERR_SHAPE, f"select index has {idx.size} entries, tensor `{t.name}` has {lead} rows.",
                       "give one index per partition.")
        picked = np.take_along_axis(offs, np.broadcast_to(idx.reshape((-1,) + (1,) * (offs.ndim - 1)),
                                                          offs.shape[:-1] + (1,)), axis=-1)[..., 0]
        return _gather(t, picked)
    i = int(index)
    i = i + t.shape[d] if i < 0 else i
    if not 0 <= i < t.shape[d]:
        raise fail(ERR_OOB, f"Out-of-bound access for tensor `{t.name}` on dimension {d}: index range [{i}, {i}] "
                   f"exceed dimension size of {t.shape[d]}.", "select an index inside the dimension.")
    if t.index is not None:
        return _gather(t, np.take(t.index, i, axis=d))
    shape = t.shape[:d] + t.shape[d + 1:]
    strides = t.strides[:d] + t.strides[d + 1:]  # type: ignore[index]
    pdim = None if t.pdim == d else (t.pdim - 1 if t.pdim is not None and t.pdim > d else t.pdim)
    offset = t.offset + i * t.strides[d]  # type: ignore[index]
    return _new(t, shape, strides, offset, pdim=pdim if pdim is not None else 0)


def broadcast(t: NkiTensor, dim: int, size: int) -> NkiTensor:
    d = _dim(t, dim)
    if t.shape[d] != 1:
        raise fail(ERR_SHAPE, f"cannot broadcast dimension {d} of `{t.name}` (size {t.shape[d]}) to {size}.",
                   "only size-1 dimensions broadcast.")
    if t.index is not None:
        return _gather(t, np.repeat(t.index, size, axis=d))
    strides = list(t.strides or ())
    strides[d] = 0
    shape = list(t.shape)
    shape[d] = int(size)
    return _new(t, tuple(shape), tuple(strides), pdim=t.pdim)


def broadcast_to(t: NkiTensor, shape: Any) -> NkiTensor:
    new = _shape_arg((shape,) if isinstance(shape, (tuple, list)) else (shape,))
    if len(new) != t.ndim:
        raise fail(ERR_SHAPE, f"broadcast_to{new} changes the rank of `{t.name}` {t.shape}.",
                   "expand dimensions first (expand_dims) so the ranks match.")
    out = t
    for d, (have, want) in enumerate(zip(t.shape, new)):
        if have != want:
            out = broadcast(out, d, want)
    return out


def expand_dim(t: NkiTensor, dim: int) -> NkiTensor:
    d = dim + t.ndim + 1 if dim < 0 else dim
    if t.index is not None:
        return _gather(t, np.expand_dims(t.index, d))
    shape = t.shape[:d] + (1,) + t.shape[d:]
    strides = t.strides[:d] + (0,) + t.strides[d:]  # type: ignore[index]
    pdim = t.pdim + 1 if t.pdim is not None and t.pdim >= d else t.pdim
    return _new(t, shape, strides, pdim=pdim)


def squeeze_dim(t: NkiTensor, dim: int) -> NkiTensor:
    d = _dim(t, dim)
    if t.shape[d] != 1:
        raise fail(ERR_SHAPE, f"cannot squeeze dimension {d} of `{t.name}`: its size is {t.shape[d]}.",
                   "only size-1 dimensions can be squeezed.")
    return select(t, d, 0)


def reshape_dim(t: NkiTensor, dim: int, shape: Any) -> NkiTensor:
    d = _dim(t, dim)
    parts = _shape_arg((shape,))
    return reshape(t, t.shape[:d] + parts + t.shape[d + 1:])


def flatten_dims(t: NkiTensor, start: int = 0, end: int = -1) -> NkiTensor:
    s, e = _dim(t, start), _dim(t, end)
    return reshape(t, t.shape[:s] + (math.prod(t.shape[s:e + 1]),) + t.shape[e + 1:])


_GROUP = re.compile(r"\(([^)]*)\)|(\S+)")


def _parse_side(side: str) -> list[list[str]]:
    return [m.group(1).split() if m.group(1) is not None else [m.group(2)] for m in _GROUP.finditer(side)]


def rearrange(t: NkiTensor, pattern: str, **sizes: int) -> NkiTensor:
    """einops-style `"p (a b) -> p b a"`: split, permute and merge dimensions as one view."""
    lhs, rhs = (s.strip() for s in pattern.split("->"))
    left, right = _parse_side(lhs), _parse_side(rhs)
    if len(left) != t.ndim:
        raise fail(ERR_SHAPE, f"pattern {lhs!r} names {len(left)} dims, tensor `{t.name}` has {t.ndim}.",
                   "name every dimension of the input.")
    axes: list[str] = []
    split_shape: list[int] = []
    for group, n in zip(left, t.shape):
        unknown = [a for a in group if a not in sizes]
        known = math.prod(sizes[a] for a in group if a in sizes)
        if len(unknown) > 1:
            raise fail(ERR_SHAPE, f"group {group} in {lhs!r} has more than one unknown size.",
                       "pass the sizes as keyword arguments.")
        for a in group:
            sizes.setdefault(a, n // max(known, 1))
            axes.append(a)
            split_shape.append(sizes[a])
    out = reshape(t, tuple(split_shape))
    order = [axes.index(a) for group in right for a in group]
    out = permute(out, *order)
    return reshape(out, tuple(math.prod(sizes[a] for a in group) for group in right))


def reinterpret(t: NkiTensor, dtype: Any) -> NkiTensor:
    """Same bytes, another dtype of the same width (a free view; widths differ -> copy would be needed)."""

    dt = dtypes.as_dtype(dtype)
    if dtypes.itemsize(dt) != t.itemsize:
        raise fail(ERR_SHAPE, f"view of `{t.name}` as {dtypes.name(dt)} changes the element width "
                   f"({t.itemsize} -> {dtypes.itemsize(dt)} bytes).", "reinterpret only between types of the "
                   "same width, or copy with nl.copy(x, dtype=...) to convert values.")
    st = t.storage
    st.flush()
    alias = Storage(st.shape, dt, st.buffer, st.name, st.partition_axis,
                    data=st.data.view(dtypes.storage_dtype(dt)))
    alias.written, alias.live = st.written, st.live
    return t.derive(t.shape, t.strides, t.offset, t.pdim, t.index, t.bounds, storage=alias)


def get_pattern(t: NkiTensor) -> list[list[int]]:
    if t.index is not None:
        raise fail(ERR_MEMORY, f"tensor `{t.name}` is a gather and has no access pattern.", "")
    return [[int(s), int(n)] for s, n in zip(t.strides or (), t.shape)]


def access_pattern(t: NkiTensor, pattern: Any, offset: int | None, scalar_offset: Any, vector_offset: Any,
                   indirect_dim: int, dtype: Any) -> NkiTensor:
    """`.ap([[stride, count], ...])` over the whole storage (it ignores the view it is called on)."""
    st = t.storage
    pairs = [(int(s), int(n)) for s, n in pattern]
    if st.buffer.on_chip and pairs and pairs[0][0] != st.partition_stride and pairs[0][1] > 1:
        raise fail(ERR_MEMORY, f".ap on on-chip tensor `{st.name}`: partition stride {pairs[0][0]} must equal "
                   f"the free size {st.partition_stride}.", "step partitions with the storage's free size.")
    base = int(offset or 0)
    if scalar_offset is not None:
        if isinstance(scalar_offset, NkiTensor):
            data_dependence.mark()
            value = int(scalar_offset.read().reshape(-1)[0])
        else:
            value = int(scalar_offset)
        base += value * math.prod(st.shape[indirect_dim + 1:])
    shape = tuple(n for _, n in pairs)
    strides = tuple(s for s, _ in pairs)
    view = t.derive(shape, strides, base, 0)
    if vector_offset is None:
        extent = base + sum((n - 1) * s for s, n in pairs if s > 0)
        low = base + sum((n - 1) * s for s, n in pairs if s < 0)
        if low < 0 or extent >= st.size:
            raise fail(ERR_OOB, f"Out-of-bound access for tensor `{st.name}`: access pattern reaches elements "
                       f"[{low}, {extent}] of {st.size}.", "shrink the counts or the offset.")
        out = view
    else:
        data_dependence.mark()
        rows = vector_offset.read().astype(np.int64).reshape(-1)
        row_elems = math.prod(st.shape[indirect_dim + 1:])
        offs = view.offsets()
        lead = offs.shape[0]
        per_row = rows[:lead].reshape((lead,) + (1,) * (offs.ndim - 1))
        index = offs - (np.arange(lead) * strides[0]).reshape(per_row.shape) + per_row * row_elems
        out = t.derive(shape, None, 0, 0, index=index,
                       bounds=(Bound(indirect_dim, np.broadcast_to(per_row, shape), st.shape[indirect_dim], True),))
    if dtype is not None:
        out = reinterpret(out, dtype)
    return out




def vector_select(t: NkiTensor, dim: int, vector_offset: Any) -> NkiTensor:
    """Per-partition indirect rows of an HBM tensor: result[p, ...] = t[vector_offset[p], ...], shape
    (vector_offset.shape[0], *t.shape[1:]). Indices are bounds-checked when the view is used (so
    `dma_copy(oob_mode=skip)` can drop them)."""
    d = _dim(t, dim)
    if d != 0:
        raise fail(ERR_INVALID_ARG, f"vector_select on `{t.name}` selects dimension {d}; only dimension 0 is "
                   "supported.", "vector_select(0, offsets).")
    if not t.buffer.is_hbm:
        raise fail(ERR_MEMORY, f"vector_select on `{t.name}` in '{t.buffer.name}': only HBM tensors support it.",
                   "use nisa.local_gather / nc_n_gather on chip, or vector_select the HBM source of a dma_copy.")
    if t.index is not None:
        raise fail(ERR_INVALID_ARG, f"`{t.name}` is already an indirect view; only one dynamic select per tensor.",
                   "select from the tensor itself.")
    if not isinstance(vector_offset, NkiTensor) or vector_offset.buffer != SBUF:
        where = vector_offset.buffer.name if isinstance(vector_offset, NkiTensor) else type(vector_offset).__name__
        raise fail(ERR_MEMORY, f"vector_select offsets must be an SBUF tensor, got {where}.",
                   "load the (P, 1) offsets into SBUF.")
    p = vector_offset.shape[0]
    if vector_offset.size != p:
        raise fail(ERR_SHAPE, f"vector_select offsets have shape {vector_offset.shape}; one index per partition, "
                   "(P, 1), is expected.", "give a (P, 1) offsets tile.")
    data_dependence.mark()
    rows = vector_offset.read().astype(np.int64).reshape((p,) + (1,) * (t.ndim - 1))
    base = t.offsets()[:1]                                           # the row-0 offsets of the view
    shape = (p,) + tuple(t.shape[1:])
    index = base + rows * t.strides[0]  # type: ignore[index]
    return t.derive(shape, None, 0, 0, index=index, bounds=(Bound(0, np.broadcast_to(rows, shape), t.shape[0], True),))
