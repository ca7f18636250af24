"""Reductions along free dims (Vector), across partitions (GpSimd), batch-norm statistics, and the
composite `nl.softmax` / `nl.rms_norm` built from them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import alu, context
from ..core.buffers import SBUF
from ..core.tensor import NkiTensor
from ..errors import ERR_DIM_LIMIT, ERR_INVALID_ARG, ERR_REDUCE_AXIS, ERR_SHAPE, fail
from .common import (
    allocate,
    check_on_chip,
    check_partitions,
    input_mask,
    output_mask,
    read,
    read_raw,
    write,
)


def normalise_axes(t: NkiTensor, axis: Any, api: str, trailing: bool = True, legacy: bool = False) -> tuple[int, ...]:
    """Reduce axes must be free dims and, for one instruction, the trailing contiguous ones ([1], [1, 2], ...).
    `nl.*` reductions (`trailing=False`) take any free axes (`nl.sum(t, axis=[2, 4])`): the compiler
    lowers them to instructions over a permuted access pattern. The legacy ISA's documentation says the axes
    "must start at the most minor free axis" (axis 1) and be consecutive: `axis=(1,)` of a (P, 8, 4) tile
    (AWS's paged-attention kernel) is legal there (`legacy=True` accepts that and the trailing form)."""
    if axis is None:
        axes = tuple(range(1, t.ndim))
    else:
        raw = axis if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(sorted(int(a) + t.ndim if int(a) < 0 else int(a) for a in raw))
    pdim = t.pdim if t.pdim is not None else 0
    if not axes or pdim in axes:
        raise fail(ERR_REDUCE_AXIS, f"'{api}' reduces axis {list(axes)} of `{t.name}` {t.shape}, which includes the "
                   "partition dimension.", "reduce free dims only (axis=1 / [1, 2]); reduce across partitions with "
                   "nisa.tensor_partition_reduce or a matmul with a ones vector.")
    consecutive = axes == tuple(range(axes[0], axes[0] + len(axes)))
    if trailing and not (consecutive and (axes[-1] == t.ndim - 1 or (legacy and axes[0] == 1))):
        which = "consecutive free axes ending at the last one or starting at axis 1" if legacy else \
            "the last contiguous free axes"
        raise fail(ERR_REDUCE_AXIS, f"'{api}' reduces axes {list(axes)} of `{t.name}` {t.shape}; only {which} can "
                   "be reduced.", "permute the tile so the reduced axes come last.")
    return axes


def tensor_reduce(dst: NkiTensor, op: Any, data: NkiTensor, axis: Any, negate: bool = False, keepdims: bool = False,
                  mask: np.ndarray | None = None, api: str = "tensor_reduce", trailing: bool = True,
                  legacy: bool = False) -> None:
    check_on_chip(data, api, "data")
    check_partitions(data, api, "data")
    check_on_chip(dst, api, "dst")
    axes = normalise_axes(data, axis, api, trailing, legacy)
    name = alu.op_name(op)
    x = read_raw(data, mask) if name.startswith("bitwise") else read(data, mask)
    if mask is not None:  # masked-off elements do not take part
        identity = alu.REDUCE.get(name, (None, 0.0))[1]
        x = np.where(np.broadcast_to(mask, x.shape), x, identity)
    out = alu.reduce(name, x, axes, keepdims=True)
    if negate:
        out = -out
    write(dst, out.reshape(dst.shape) if out.size == dst.size else out, None, api)
    run = context.current()
    n = data.free_size
    # AWS's table: N/2 when input and output are both bf16 and the operator is add or maximum
    fast = data.dtype == dtypes.bfloat16 and dst.dtype == dtypes.bfloat16 and name in ("add", "maximum")
    run.issue("vector", max(cost.MIN_II, n // 2 if fast else n), (data,), (dst,),
                     cost.SBUF_ACCESS_CYCLES)


def nl_reduce(name: str, x: NkiTensor, axis: Any, dtype: Any = None, keepdims: bool = False,
              mask: np.ndarray | None = None) -> NkiTensor:
    axes = normalise_axes(x, axis, f"nl.{name}", trailing=False)
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    if len(shape) < 2 and not keepdims:  # tiles stay >= 2-D on chip
        shape = tuple(shape) + (1,) * (2 - len(shape))
    dt = dtypes.as_dtype(dtype) if dtype is not None else x.dtype
    op = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "multiply", "all": "logical_and",
          "mean": "add", "var": "add"}[name]
    dst = allocate(shape, dt, SBUF)
    if name in ("mean", "var"):
        vals = read(x, mask)
        # masked-off elements take no part; a fully masked row gives 0 instead of 0/0
        keep = np.ones(vals.shape, np.float32) if mask is None else np.broadcast_to(mask, vals.shape).astype(np.float32)
        count = np.maximum(keep.sum(axis=axes, keepdims=True), 1.0)
        mean = (np.where(keep > 0, vals, 0).sum(axis=axes, keepdims=True) / count).astype(np.float32)
        out = mean if name == "mean" else (np.where(keep > 0, np.square(vals - mean), 0).sum(
            axis=axes, keepdims=True) / count).astype(np.float32)
        write(dst, out.reshape(shape), None, f"nl.{name}")
        run = context.current()
        if name == "mean":  # one reduce over the row, then a tiny scale of the (P, 1) sums by 1/count
            run.issue("vector", max(cost.MIN_II, x.free_size), (x,), (dst,), cost.SBUF_ACCESS_CYCLES)
            run.issue("vector", cost.MIN_II, (dst,), (dst,), cost.SBUF_ACCESS_CYCLES)
        else:  # the mean, then the squared deviations reduced: two passes
            run.issue("vector", max(cost.MIN_II, 2 * x.free_size), (x,), (dst,))
        return dst
    tensor_reduce(dst, op, x, axes, keepdims=keepdims, mask=mask, api=f"nl.{name}", trailing=False)
    return dst


def tensor_partition_reduce(dst: NkiTensor, op: Any, data: NkiTensor, api: str = "tensor_partition_reduce",
                            mask: np.ndarray | None = None) -> None:
    """Reduce across partitions (GpSimd); a mask over the input excludes elements."""
    check_on_chip(data, api, "data")
    check_partitions(data, api, "data")
    name = alu.op_name(op)
    x = read(data, mask)
    if mask is not None:
        x = np.where(input_mask(api, mask, data.shape), x, alu.REDUCE.get(name, (None, 0.0))[1])
    out = alu.reduce(name, x, (0,), keepdims=True)
    write(dst, out, None, api)
    context.current().issue("gpsimd", cost.gpsimd_cycles(data.size), (data,), (dst,))


# ndarray.sum without its Python wrapper (NumPy's _methods._sum calls exactly this): bn_stats / bn_aggr sum
# a handful of small arrays per instruction
_sum = np.add.reduce


def bn_stats(dst: NkiTensor, data: NkiTensor, api: str = "bn_stats", mask: np.ndarray | None = None) -> None:
    """Six values per partition: (count, mean, count*var) for the even and odd halves, mergeable by bn_aggr.
    A mask over the input leaves elements out of the statistics."""
    check_on_chip(data, api, "data")
    check_partitions(data, api, "data")
    run = context.current()
    n = data.free_size
    if n > 512:
        raise fail(ERR_DIM_LIMIT, f"'{api}' takes at most 512 elements per partition, got {n}.",
                   "split the free dim into chunks of nl.tile_size.bn_stats_fmax and aggregate with bn_aggr.")
    # masked-off elements are not accessed (a tail tile's gather may run past the tile where the mask is off)
    x = read(data, mask).reshape(data.partitions, -1).astype(np.float32, copy=False)  # only read below
    if mask is None:  # every element counts, with weight 1: no weights at all (the same bits)
        # contiguous halves: summed in the order np.where's copy of them would be
        halves = [(np.ascontiguousarray(x[:, 0::2]), None), (np.ascontiguousarray(x[:, 1::2]), None)]
    else:
        keep = input_mask(api, mask, data.shape).reshape(x.shape).astype(np.float32)
        halves = [(x[:, 0::2], keep[:, 0::2]), (x[:, 1::2], keep[:, 1::2])]
    cols = []
    for h, k in halves:
        if k is None:
            cnt, total = np.full((x.shape[0], 1), h.shape[1], np.float32), _sum(h, axis=1, keepdims=True)
        else:
            cnt, total = k.sum(axis=1, keepdims=True), np.where(k > 0, h, 0).sum(axis=1, keepdims=True)
        mean = (total / np.maximum(cnt, 1)).astype(np.float32)
        dev = (h - mean) ** 2
        m2 = _sum(dev if k is None else k * dev, axis=1, keepdims=True).astype(np.float32)
        cols += [cnt, mean, m2]
    write(dst, np.concatenate(cols, axis=1).reshape(dst.shape), None, api)
    run.issue("vector", max(cost.MIN_II, n), (data,), (dst,))


def bn_aggr(dst: NkiTensor, data: NkiTensor, api: str = "bn_aggr", mask: np.ndarray | None = None) -> None:
    """Merge bn_stats groups (6 values each, concatenated on the free dim) into (mean, variance)."""
    check_on_chip(data, api, "data")
    stats = read(data).reshape(data.partitions, -1, 3).astype(np.float64)
    if stats.shape[1] == 0:
        raise fail(ERR_SHAPE, f"'{api}' input has no statistics.", "pass the output of nisa.bn_stats.")
    cnt, mean, m2 = stats[..., 0], stats[..., 1], stats[..., 2]
    total = _sum(cnt, axis=1, keepdims=True)
    gmean = _sum(cnt * mean, axis=1, keepdims=True) / np.maximum(total, 1)
    var = _sum(m2 + cnt * (mean - gmean) ** 2, axis=1, keepdims=True) / np.maximum(total, 1)
    write(dst, np.concatenate([gmean, var], axis=1).astype(np.float32).reshape(dst.shape),
          output_mask(api, mask, dst.shape), api)
    n = data.free_size
    context.current().issue("vector", max(cost.MIN_II, 13 * (n // 3)), (data,), (dst,))


def nl_softmax(x: NkiTensor, axis: Any = -1, dtype: Any = None, mask: np.ndarray | None = None) -> NkiTensor:
    axes = normalise_axes(x, axis, "nl.softmax")
    run = context.current()
    v = read(x, mask)
    e = np.exp(v - v.max(axis=axes, keepdims=True))
    out = e / e.sum(axis=axes, keepdims=True)
    dst = allocate(x.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, SBUF)
    write(dst, out, mask, "nl.softmax")
    n = x.free_size  # max reduce, exp with bias and sum, reciprocal, multiply
    run.issue("vector", max(cost.MIN_II, n), (x,), (dst,))
    run.issue("scalar", cost.scalar_cycles(n, True), (x,), (dst,))
    run.issue("vector", max(cost.MIN_II, n), (dst,), (dst,))
    return dst


def nl_rms_norm(x: NkiTensor, w: Any, axis: Any, n: int, epsilon: float = 1e-6, dtype: Any = None,
                compute_dtype: Any = None, mask: np.ndarray | None = None) -> NkiTensor:
    axes = normalise_axes(x, axis, "nl.rms_norm")
    if n <= 0:
        raise fail(ERR_INVALID_ARG, f"nl.rms_norm needs n > 0 (the element count normalised), got {n}.",
                   "pass the size of the reduced axis.")
    v = read(x, mask)
    rms = np.sqrt(np.square(v).sum(axis=axes, keepdims=True) / np.float32(n) + np.float32(epsilon))
    out = v / rms * (read(w) if isinstance(w, NkiTensor) else np.float32(w))
    dst = allocate(x.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, SBUF)
    write(dst, out, mask, "nl.rms_norm")
    run = context.current()
    run.issue("scalar", cost.scalar_cycles(x.free_size, True), (x,), (dst,))
    run.issue("vector", max(cost.MIN_II, 2 * x.free_size), (x, w), (dst,))
    return dst
