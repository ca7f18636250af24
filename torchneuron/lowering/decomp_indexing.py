"""Neuron decompositions: indexing, scatter, scan and sorting-based ops torch-mlir has no StableHLO lowering for.

Everything here is rewritten into ops torch-mlir lowers: elementwise math, ``where``, ``sort``, ``gather`` /
``index_select``, ``cat`` / slices, ``cumsum``, ``scatter_add`` and ``scatter.src``. Shapes are static, so the
only loops are over static sizes (scan steps, dimensions), never over tensor values.

Building blocks:

- ``_scan``: an inclusive Hillis–Steele scan along a dim in ceil(log2 n) steps of "combine with the element d
  to the left" (cumprod, cummax/cummin and segmented reductions); O(n log n) work, O(n) memory, exact for
  associative combines (products round in tree order instead of left-to-right).
- ``_segment_reduce_flat``: a reduction of values grouped by integer keys (scatter_reduce / index_reduce with
  prod/amax/amin): sort by key (the order within a key does not matter: the ops commute), segmented scan, then each segment's last element is written with a
  scatter in which every target slot receives exactly one write (the others go to a dropped dummy slot), so
  XLA's unspecified order of duplicate scatter writes never matters.
- ``_binary_search``: a vectorised lower/upper bound, ceil(log2(n+1)) gather steps, the same predicate as
  PyTorch's kernel (so NaN queries land where PyTorch puts them).
- ``_stable_sort_last``: a stable, NaN-last sort from two sorts torch-mlir lowers (its own is unstable and
  mishandles NaN), for mode and nanmedian, whose indices depend on the order of ties.

Costs are O(n log n) or O(n * log bins) in time and O(n) in memory; nothing builds an n x m one-hot.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

aten = torch.ops.aten


# ------------------------------------------------------------------------------------------ small helpers
def _arange(n: int, like: torch.Tensor | None = None, dtype=torch.int64) -> torch.Tensor:
    return torch.arange(n, dtype=dtype, device=like.device if like is not None else "cpu")


def _along(v: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    """A 1-D tensor reshaped to broadcast along ``dim`` of an ``ndim``-d tensor."""
    shape = [1] * ndim
    shape[dim] = v.shape[0]
    return v.reshape(shape)


def _shift_combine(state: tuple, dim: int, d: int, combine: Callable) -> tuple:
    """One Hillis–Steele step: element k becomes combine(element k-d, element k) for k >= d."""
    n = state[0].shape[dim]
    left = tuple(s.narrow(dim, 0, n - d) for s in state)
    right = tuple(s.narrow(dim, d, n - d) for s in state)
    merged = combine(left, right)
    return tuple(torch.cat([s.narrow(dim, 0, d), m], dim) for s, m in zip(state, merged))


def _scan(state: tuple, dim: int, combine: Callable) -> tuple:
    """Inclusive scan of a tuple of same-shaped tensors along ``dim`` (combine(left, right) -> tuple)."""
    n = state[0].shape[dim]
    d = 1
    while d < n:
        state = _shift_combine(state, dim, d, combine)
        d *= 2
    return state


# ----------------------------------------------------------------------------------------------- scans
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
        idx = _along(_arange(self.shape[dim], self), dim, self.dim()).expand(self.shape)
        values, indices = _scan((self, idx), dim, combine)
        return values, indices.clone()

    return decomp


# ------------------------------------------------------------------------------------- scatter reductions
def _flat_targets(self_shape, dim: int, index: torch.Tensor) -> torch.Tensor:
    """Row-major flat position in ``self`` that each element of ``index`` addresses along ``dim`` (1-D)."""
    strides = [1] * len(self_shape)
    for d in range(len(self_shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * self_shape[d + 1]
    pos = index.to(torch.int64) * strides[dim]
    for d in range(index.dim()):
        if d != dim:
            pos = pos + _along(_arange(index.shape[d], index), d, index.dim()) * strides[d]
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


def _take(self, index):
    """take: index_select on the flattened tensor (negative indices count from the end); PyTorch's own
    decomposition checks the bounds with a data-dependent branch."""
    flat = self.reshape(-1)
    idx = index.reshape(-1).to(torch.int64)
    idx = torch.where(idx < 0, idx + flat.shape[0], idx)
    return flat.index_select(0, idx).reshape(index.shape)


def _put(self, index, source, accumulate=False):
    """put: index_put on the flattened tensor (negative indices count from the end)."""
    flat = self.reshape(-1)
    idx = index.reshape(-1).to(torch.int64)
    idx = torch.where(idx < 0, idx + flat.shape[0], idx)
    out = aten.index_put.default(flat, [idx], source.reshape(-1).to(self.dtype), accumulate)
    return out.reshape(self.shape)


def _index_put_mask(self, indices, values, accumulate=False):
    """index_put with one boolean mask (``x[mask] = v``, after any leading ``None``): a ``where`` over the
    masked positions. torch-mlir turns a mask into ``nonzero`` (a data-dependent shape). When ``v`` has one
    row per selected element, the element of rank r (row-major among the True positions) takes row r,
    found with a cumsum of the mask. Integer-only indices go to torch-mlir's own lowering."""
    tensors = [i for i in indices if i is not None]
    if len(tensors) != 1 or tensors[0].dtype not in (torch.bool, torch.uint8):
        return NotImplemented
    p = next(k for k, i in enumerate(indices) if i is not None)
    mask = tensors[0].to(torch.bool)
    m = mask.dim()
    rest = list(self.shape[p + m:])
    r = p + 1 + len(rest)  # rank of the indexed result: self[:p] + [count] + rest
    v = values.to(self.dtype).reshape([1] * (r - values.dim()) + list(values.shape))
    if v.shape[p] == 1:
        v = v.reshape(list(v.shape[:p]) + [1] * m + list(v.shape[p + 1:]))
    else:  # one row per True position, in row-major order of the mask
        rank = torch.cumsum(mask.reshape(-1).to(torch.int64), 0) - 1
        rank = rank.clamp(0, v.shape[p] - 1)
        v = v.index_select(p, rank).reshape(list(v.shape[:p]) + list(mask.shape) + list(v.shape[p + 1:]))
    v = v.expand(self.shape)
    where = mask.reshape([1] * p + list(mask.shape) + [1] * len(rest)).expand(self.shape)
    if accumulate:
        return torch.where(where, self + v, self)
    return torch.where(where, v, self)


# --------------------------------------------------------------------------------------- searching, moving
def _binary_search(seq, values, right: bool):
    """PyTorch's lower/upper bound for each of ``values`` in the last dim of ``seq`` (1-D, or with the same
    leading dims as ``values``), as a fixed number of vectorised bisection steps. The predicate is PyTorch's
    (go right while ``!(seq[mid] >= v)``, resp. ``!(seq[mid] > v)``), so NaNs end up where PyTorch puts
    them. O(numel(values) * log n)."""
    n = seq.shape[-1]
    start = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    end = torch.full(values.shape, n, dtype=torch.int64, device=values.device)
    for _ in range(n.bit_length()):  # each step at least halves end - start, which starts at n
        mid = start + torch.div(end - start, 2, rounding_mode="floor")
        at = mid.clamp(max=n - 1)
        if seq.dim() == 1:
            pivot = seq.index_select(0, at.reshape(-1)).reshape(at.shape)
        else:
            pivot = seq.gather(-1, at)
        go_right = ~(pivot > values) if right else ~(pivot >= values)
        active = start < end
        start = torch.where(active & go_right, mid + 1, start)
        end = torch.where(active & ~go_right, mid, end)
    return start


def _searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted by vectorised bisection (``_binary_search``); ``sorter`` permutes the sequence first."""
    right = bool(right) or side == "right"
    out_dtype = torch.int32 if out_int32 else torch.int64
    if not isinstance(self, torch.Tensor):  # the Scalar overload: compared in the promoted dtype, as PyTorch
        self = torch.full((), self, dtype=torch.result_type(sorted_sequence, self), device=sorted_sequence.device)
    values = self
    seq = sorted_sequence if sorter is None else sorted_sequence.gather(-1, sorter.to(torch.int64))
    if values.numel() == 0 or seq.shape[-1] == 0:
        return torch.zeros(values.shape, dtype=out_dtype, device=values.device)
    return _binary_search(seq, values, right).to(out_dtype)


def _searchsorted_scalar(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    return _searchsorted(sorted_sequence, self, out_int32=out_int32, right=right, side=side, sorter=sorter)


def _roll(self, shifts, dims=()):
    """roll as two slices and a cat per rolled dim (torch-mlir's own lowering mis-sizes a zero shift)."""
    if self.numel() == 0:
        return self.clone()
    if len(dims) == 0:  # roll the flattened tensor
        return _roll(self.reshape(-1), shifts, [0]).reshape(self.shape)
    out = self
    for shift, dim in zip(shifts, dims):
        dim = dim % self.dim()
        n = self.shape[dim]
        s = shift % n
        if s:
            out = torch.cat([out.narrow(dim, n - s, s), out.narrow(dim, 0, n - s)], dim)
    return out.clone() if out is self else out


def _narrow_copy(self, dim, start, length):
    """narrow_copy as a slice + clone; an empty result is built directly (torch-mlir mis-types a zero-length
    slice)."""
    dim = dim % max(self.dim(), 1)
    if length == 0:
        shape = list(self.shape)
        shape[dim] = 0
        return torch.zeros(shape, dtype=self.dtype, device=self.device)
    start = start % self.shape[dim] if start < 0 else start
    return self.narrow(dim, start, length).clone()


def _nonzero_static(self, *, size, fill_value=-1):
    """nonzero_static: each nonzero element's rank among the nonzeros (an exclusive cumsum) is its output row;
    a scatter writes the flat index there (the others go to a dropped dummy row, so every kept row has
    one writer), then the flat indices become coordinates; rows past the count hold ``fill_value``."""
    nd = self.dim()
    n = self.numel()
    if size == 0 or nd == 0 or n == 0:
        if nd == 0 and size > 0:  # a scalar has no coordinates: (size, 0)
            return torch.zeros((size, 0), dtype=torch.int64, device=self.device)
        return torch.full((size, nd), fill_value, dtype=torch.int64, device=self.device)
    flat = self.reshape(-1)
    nz = flat if flat.dtype == torch.bool else flat != 0
    nz64 = nz.to(torch.int64)
    rank = torch.cumsum(nz64, 0) - 1
    target = torch.where(nz & (rank < size), rank, torch.full_like(rank, size))
    slots = torch.zeros(size + 1, dtype=torch.int64, device=self.device).scatter(
        0, target, _arange(n, self))[:size]
    coords = []
    rest = slots
    stride = n
    for d in range(nd):  # peel coordinates off with floor divisions (integer fmod has no lowering)
        stride //= self.shape[d]
        c = torch.div(rest, stride, rounding_mode="floor")
        rest = rest - c * stride
        coords.append(c)
    out = torch.stack(coords, 1)
    valid = (_arange(size, self) < nz64.sum()).reshape(size, 1)
    return torch.where(valid, out, torch.full_like(out, fill_value))


# ----------------------------------------------------------------------------------- sort-based selection
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
    k = _arange(n, self).expand(values.shape)
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


# ------------------------------------------------------------------------------------------- scatter views
def _diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter as a ``where`` over the diagonal's positions, reading ``src`` at each position's
    diagonal index (PyTorch's decomposition writes through a view, which functionalization cannot remove)."""
    nd = self.dim()
    dim1, dim2 = dim1 % nd, dim2 % nd
    n1, n2 = self.shape[dim1], self.shape[dim2]
    length = src.shape[-1]
    if length == 0:
        return self.clone()
    a = _arange(n1, self).reshape(n1, 1)
    b = _arange(n2, self).reshape(1, n2)
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
        pos = pos + _along(_arange(n, self), d, len(size)) * st
    out = aten.index_put.default(flat, [pos.reshape(-1)], src.to(self.dtype).reshape(-1), False)
    out = out.reshape(base.shape)
    if base is self:
        return out
    inverse = [order.index(d) for d in range(self.dim())]
    return out.permute(inverse).clone()


# -------------------------------------------------------------------------------------------- histograms
def _linspace(start, end, steps: int):
    """PyTorch's CPU linspace for tensor endpoints (0-d, in the output dtype): the first half counts up from
    ``start``, the second half down from ``end``, so both ends are exact."""
    i = _arange(steps, start).to(start.dtype)
    step = (end - start) / (steps - 1)
    up = start + step * i
    down = end - step * (steps - 1 - i)
    return torch.where(_arange(steps, start) < steps // 2, up, down)


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


# ------------------------------------------------------------------------------------------ segment_reduce
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
    positions = _arange(n, data).expand(list(offsets.shape[:-1]) + [n])
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


# ------------------------------------------------------------------------------------------- hash_tensor
def _float64_bits(x):
    """The IEEE float64 bit pattern (as int64) of each element of a float tensor of at most 32 bits, built
    from its float32 bits with integer ops (float64 itself is emulated as float32 on this path): rebias the
    exponent, widen the mantissa, normalise float32 subnormals (all normal in float64), keep inf/NaN.
    Shift and mask amounts are tensors: torch-mlir lowers only the Tensor-Tensor bitwise forms."""
    b = x.to(torch.float32).view(torch.int32).to(torch.int64)

    def k(v):
        return torch.full_like(b, v)

    b = torch.bitwise_and(b, k(0xFFFFFFFF))
    sign = torch.bitwise_right_shift(b, k(31))
    exp = torch.bitwise_and(torch.bitwise_right_shift(b, k(23)), k(0xFF))
    man = torch.bitwise_and(b, k(0x7FFFFF))
    top = torch.zeros_like(man)  # index of a subnormal mantissa's highest set bit
    for bit in range(1, 23):
        top = top + (man >= (1 << bit)).to(torch.int64)
    sub_man = torch.bitwise_left_shift(man - torch.bitwise_left_shift(k(1), top), k(52) - top)
    is_zero = (exp == 0) & (man == 0)
    exp64 = torch.where(exp == 255, k(2047), torch.where(exp == 0, top - 149 + 1023, exp - 127 + 1023))
    exp64 = torch.where(is_zero, k(0), exp64)
    man64 = torch.where(exp == 0, sub_man, torch.bitwise_left_shift(man, k(29)))
    man64 = torch.where(is_zero, k(0), man64)
    return torch.bitwise_or(torch.bitwise_or(torch.bitwise_left_shift(sign, k(63)),
                                             torch.bitwise_left_shift(exp64, k(52))), man64)


def _hash_tensor(self, dim=(), *, keepdim=False, mode=0):
    """hash_tensor (mode 0): xor of the elements' 64-bit patterns (floats as float64, integers as int64),
    over ``dim`` (all dims when empty), by pairwise xor halving; computed in int64 and returned as uint64
    (same bits)."""
    if mode != 0:
        return NotImplemented
    bits = _float64_bits(self) if self.is_floating_point() else self.to(torch.int64)
    nd = self.dim()
    dims = sorted({d % max(nd, 1) for d in dim}) if len(dim) else list(range(nd))
    kept = [d for d in range(nd) if d not in dims]
    x = bits.permute(kept + dims).reshape([self.shape[d] for d in kept] + [-1]) if nd else bits.reshape(1)
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = torch.cat([x, torch.zeros_like(x[..., :1])], -1)
        half = x.shape[-1] // 2
        x = torch.bitwise_xor(x[..., :half], x[..., half:])
    out = x[..., 0] if x.shape[-1] == 1 else torch.zeros(x.shape[:-1], dtype=torch.int64, device=x.device)
    if keepdim:
        out = out.reshape([1 if d in dims else self.shape[d] for d in range(nd)])
    return out.to(torch.uint64)


# -------------------------------------------------------------------------------------------- the table
def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten.cumprod.default: _cumprod,
        aten.cummax.default: _cum_extreme(torch.ge),
        aten.cummin.default: _cum_extreme(torch.le),
        aten.scatter_reduce.two: _scatter_reduce,
        aten.scatter.reduce: _scatter_legacy_reduce,
        aten.scatter.value_reduce: _scatter_value_reduce,
        aten.index_reduce.default: _index_reduce,
        aten.put.default: _put,
        aten.take.default: _take,
        aten.index_put.default: _index_put_mask,
        aten.searchsorted.Tensor: _searchsorted,
        aten.searchsorted.Scalar: _searchsorted_scalar,
        aten.roll.default: _roll,
        aten.narrow_copy.default: _narrow_copy,
        aten.nonzero_static.default: _nonzero_static,
        aten.mode.default: _mode,
        aten.nanmedian.dim: _nanmedian_dim,
        aten.nanmedian.default: _nanmedian,
        aten.diagonal_scatter.default: _diagonal_scatter,
        aten.as_strided_scatter.default: _as_strided_scatter,
        aten.histc.default: _histc,
        aten.histogram.bin_ct: _histogram_bin_ct,
        aten.histogram.bins_tensor: _histogram_bins_tensor,
        aten._histogramdd_bin_edges.default: _histogramdd_bin_edges,
        aten._histogramdd_from_bin_cts.default: _histogramdd_from_bin_cts,
        aten._histogramdd_from_bin_tensors.default: _histogramdd_from_bin_tensors,
        aten.segment_reduce.default: _segment_reduce,
        aten.hash_tensor.default: _hash_tensor,
    }
