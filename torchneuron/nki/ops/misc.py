"""GpSimd and Vector special instructions: iota, affine/range selects, predicated copies, scans, top-8
helpers, partition shuffles, gathers and the PRNG."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import alu, context
from ..core.indexing import IndexArray
from ..core.tensor import NkiTensor
from ..errors import ERR_DIM_LIMIT, ERR_INVALID_ARG, ERR_SHAPE, fail
from .common import check_on_chip, check_partitions, mask_array, read, read_raw, storages, write


def charge(engine: str, dst: NkiTensor, inputs: list[Any], cycles: float | None = None) -> None:
    """Record one instruction writing `dst`; by default `150 + N` on GpSimd, `max(MIN_II, N)` elsewhere."""
    run = context.current()
    n = dst.free_size
    if cycles is None:
        cycles = cost.gpsimd_cycles(n) if engine == "gpsimd" else max(cost.MIN_II, n)
    run.cost.compute(engine, cycles, storages(*inputs), [dst.storage], cost.SBUF_ACCESS_CYCLES)


def pattern_values(shape: tuple[int, ...], pattern: Any, offset: int, channel_multiplier: int) -> np.ndarray:
    """offset + c*channel_multiplier + sum(step*idx) over the free pattern [[step, num], ...] (int32 math)."""
    pairs = [(int(s), int(n)) for s, n in pattern]
    p = shape[0]
    vals = np.full((p,) + tuple(n for _, n in pairs), offset, dtype=np.int64)
    vals += (np.arange(p, dtype=np.int64) * channel_multiplier).reshape((p,) + (1,) * len(pairs))
    for k, (step, n) in enumerate(pairs):
        sh = [1] * (len(pairs) + 1)
        sh[k + 1] = n
        vals += (np.arange(n, dtype=np.int64) * step).reshape(sh)
    if vals.size != int(np.prod(shape)):
        raise fail(ERR_SHAPE, f"pattern {pairs} gives {vals.size // max(p, 1)} elements per partition, the "
                   f"destination has {int(np.prod(shape[1:]))}.", "make the pattern counts match the tile.")
    return vals.reshape(shape).astype(np.int32)


def iota(dst: NkiTensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0, api: str = "iota") -> None:
    check_on_chip(dst, api, "dst")
    check_partitions(dst, api, "dst")
    if isinstance(pattern, (IndexArray, int, np.integer)):
        vals = np.broadcast_to(np.asarray(pattern.values if isinstance(pattern, IndexArray) else pattern), dst.shape)
    else:
        vals = pattern_values(dst.shape, pattern, int(offset), int(channel_multiplier))
    dst.write(dtypes.cast(vals.astype(np.int64) if dtypes.is_int(dst.dtype) else vals.astype(np.float32), dst.dtype))
    charge("gpsimd", dst, [])


def affine_select(dst: NkiTensor, predicate: Any, on_true_tile: Any, on_false_value: Any, api: str = "affine_select",
                  mask: np.ndarray | None = None) -> None:
    check_on_chip(dst, api, "dst")
    check_partitions(dst, api, "dst")
    pred = np.broadcast_to(mask_array(predicate) if not isinstance(predicate, np.ndarray) else predicate, dst.shape)
    write(dst, np.where(pred, read(on_true_tile, mask), np.float32(on_false_value)), mask, api)
    charge("gpsimd", dst, [on_true_tile])


def affine_select_pattern(dst: NkiTensor, pattern: Any, channel_multiplier: int, on_true_tile: Any,
                          on_false_value: Any, cmp_op: Any = "equal", offset: int = 0) -> None:
    """Current form: the predicate is cmp_op(affine value, 0) for the iota-style pattern."""
    vals = pattern_values(dst.shape, pattern, int(offset), int(channel_multiplier)).astype(np.float32)
    pred = alu.binary(alu.op_name(cmp_op, "cmp_op"), vals, np.float32(0)) != 0
    affine_select(dst, pred, on_true_tile, on_false_value)


def tensor_copy_predicated(dst: NkiTensor, src: Any, predicate: Any, reverse_pred: bool = False,
                           mask: np.ndarray | None = None, api: str = "tensor_copy_predicated") -> None:
    check_on_chip(dst, api, "dst")
    pred = read(predicate) != 0 if isinstance(predicate, NkiTensor) else np.asarray(mask_array(predicate))
    if reverse_pred:
        pred = ~pred
    if mask is not None:
        pred = pred & np.broadcast_to(mask, pred.shape)
    src_vals = read(src) if isinstance(src, NkiTensor) else np.float32(src)
    dst.write(dtypes.cast(np.broadcast_to(src_vals, dst.shape), dst.dtype), np.broadcast_to(pred, dst.shape))
    charge("vector", dst, [src, predicate])


def select_reduce(dst: NkiTensor, predicate: Any, on_true: Any, on_false: Any, reduce_res: NkiTensor | None = None,
                  reduce_op: Any = "maximum", reverse_pred: bool = False, api: str = "select_reduce") -> None:
    pred = read(predicate) != 0
    if reverse_pred:
        pred = ~pred
    out = np.where(pred, read(on_true), read(on_false))
    write(dst, out, None, api)
    if reduce_res is not None:
        red = alu.reduce(alu.op_name(reduce_op), out.reshape(out.shape[0], -1), (1,), True)
        write(reduce_res, red.reshape(reduce_res.shape), None, api)
    charge("vector", dst, [predicate, on_true, on_false])


def range_select(dst: NkiTensor, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_res: NkiTensor | None = None, reduce_op: Any = "maximum", range_start: int = 0,
                 on_false_value: float = float(np.finfo(np.float32).min), api: str = "range_select") -> None:
    x = read(on_true_tile).reshape(dst.partitions, -1)
    idx = (np.arange(x.shape[1], dtype=np.float32) + range_start)[None, :]
    b0 = read(bound0).reshape(-1, 1) if isinstance(bound0, NkiTensor) else np.float32(bound0)
    b1 = read(bound1).reshape(-1, 1) if isinstance(bound1, NkiTensor) else np.float32(bound1)
    keep = (alu.binary(alu.op_name(comp_op0), idx, b0) != 0) & (alu.binary(alu.op_name(comp_op1), idx, b1) != 0)
    out = np.where(keep, x, np.float32(on_false_value))
    write(dst, out.reshape(dst.shape), None, api)
    if reduce_res is not None:
        red = alu.reduce(alu.op_name(reduce_op), out, (1,), True)
        write(reduce_res, red.reshape(reduce_res.shape), None, api)
    charge("vector", dst, [on_true_tile, bound0, bound1])


def tensor_tensor_scan(dst: NkiTensor, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, api: str = "tensor_tensor_scan") -> None:
    """res[:, i] = op1(op0(data0[:, i], res[:, i-1]), data1[:, i]); a sequential scan along the free dim."""
    a = read(data0).reshape(dst.partitions, -1)
    b = read(data1).reshape(dst.partitions, -1)
    prev = (read(initial).reshape(-1) if isinstance(initial, NkiTensor) else np.full(a.shape[0], initial, np.float32))
    n0, n1 = alu.op_name(op0), alu.op_name(op1)
    out = np.empty_like(a)
    for i in range(a.shape[1]):  # inherently sequential; each step is vectorised over partitions
        t = alu.binary(n0, prev, a[:, i]) if reverse0 else alu.binary(n0, a[:, i], prev)
        prev = alu.binary(n1, b[:, i], t) if reverse1 else alu.binary(n1, t, b[:, i])
        out[:, i] = prev
    write(dst, out.reshape(dst.shape), None, api)
    charge("vector", dst, [data0, data1, initial], max(cost.MIN_II, 2 * dst.free_size))


def max8(dst: NkiTensor, src: NkiTensor, api: str = "max8") -> None:
    x = read(src).reshape(src.partitions, -1)
    if x.shape[1] < 8:
        raise fail(ERR_DIM_LIMIT, f"'{api}' needs at least 8 elements per partition, got {x.shape[1]}.",
                   "pad the tile.")
    top = -np.sort(-x, axis=1)[:, :8]
    write(dst, top.reshape(dst.shape), None, api)
    charge("vector", dst, [src], max(cost.MIN_II, src.free_size))


def nc_find_index8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, api: str = "nc_find_index8") -> None:
    x = read(data).reshape(data.partitions, -1)
    v = read(vals).reshape(vals.partitions, -1)[:, :8]
    hit = x[:, None, :] == v[:, :, None]
    idx = np.where(hit.any(axis=2), hit.argmax(axis=2), np.iinfo(np.uint32).max).astype(np.int64)
    write(dst, idx.reshape(dst.shape), None, api)
    charge("vector", dst, [data, vals], max(cost.MIN_II, data.free_size))


def nc_match_replace8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, imm: float,
                      dst_idx: NkiTensor | None = None, api: str = "nc_match_replace8") -> None:
    x = read(data).reshape(data.partitions, -1).copy()
    v = read(vals).reshape(vals.partitions, -1)[:, :8]
    found = np.full(v.shape, np.iinfo(np.uint32).max, dtype=np.int64)
    for k in range(v.shape[1]):  # eight values: each replaces its first remaining match
        hit = x == v[:, k:k + 1]
        rows = hit.any(axis=1)
        col = hit.argmax(axis=1)
        x[rows, col[rows]] = np.float32(imm)
        found[rows, k] = col[rows]
    write(dst, x.reshape(dst.shape), None, api)
    if dst_idx is not None:
        write(dst_idx, found.reshape(dst_idx.shape), None, api)
    charge("vector", dst, [data, vals], max(cost.MIN_II, data.free_size))


def nc_stream_shuffle(dst: NkiTensor, src: NkiTensor, shuffle_mask: Any, api: str = "nc_stream_shuffle") -> None:
    """Within each 32-partition quadrant, dst partition i takes src partition shuffle_mask[i] (255: keep)."""
    m = list(shuffle_mask)
    if len(m) != 32:
        raise fail(ERR_INVALID_ARG, f"'{api}' needs a 32-entry shuffle_mask, got {len(m)}.",
                   "give one entry per partition of a quadrant.")
    x = read_raw(src).reshape(src.partitions, -1)
    out = dst.read().reshape(dst.partitions, -1).copy()
    lanes = np.arange(dst.partitions)
    picks = np.asarray(m, dtype=np.int64)[lanes % 32]
    sources = (lanes // 32) * 32 + picks
    moved = (picks != 255) & (sources < x.shape[0])
    rows = x[sources[moved]]
    out[moved] = rows if x.dtype == out.dtype else dtypes.cast(dtypes.to_compute(rows), dst.dtype)
    dst.write(out.reshape(dst.shape))
    charge("vector", dst, [src])


class _Rng:
    """Per-kernel PRNG state (the hardware's LFSR/XORWOW bits are not modelled; the distribution is)."""

    def __init__(self) -> None:
        self.gen = np.random.default_rng(0)

    def seed(self, value: Any) -> None:
        self.gen = np.random.default_rng(int(np.asarray(value).reshape(-1)[0]) if not isinstance(value, int) else value)


def rng_state() -> _Rng:
    run = context.current()
    if run.rng is None:
        run.rng = _Rng()
    return run.rng


def rand(dst: NkiTensor, low: float = 0.0, high: float = 1.0, api: str = "rand") -> None:
    check_on_chip(dst, api, "dst")
    vals = rng_state().gen.random(dst.shape, dtype=np.float32) * np.float32(high - low) + np.float32(low)
    write(dst, vals, None, api)
    charge("vector", dst, [])


def rng_bits(dst: NkiTensor, api: str = "rng") -> None:
    vals = rng_state().gen.integers(0, 2**31 - 1, size=dst.shape, dtype=np.int64)
    write(dst, vals, None, api)
    charge("vector", dst, [])


def dropout(dst: NkiTensor, data: Any, prob: Any, api: str = "dropout") -> None:
    p = float(read(prob).reshape(-1)[0]) if isinstance(prob, NkiTensor) else float(prob)
    x = read(data)
    keep = rng_state().gen.random(x.shape, dtype=np.float32) >= p
    write(dst, np.where(keep, x, np.float32(0)), None, api)
    charge("vector", dst, [data])


def gather_flattened(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, api: str = "gather_flattened") -> None:
    x = read_raw(data).reshape(data.partitions, -1)
    idx = read_raw(indices).astype(np.int64).reshape(indices.partitions, -1)
    if np.any((idx < 0) | (idx >= x.shape[1])):
        from ..core.tensor import oob
        raise oob(data.name, 1, int(idx.min()), int(idx.max()), x.shape[1])
    out = np.take_along_axis(x, idx, axis=1)
    dst.write(out.reshape(dst.shape) if out.dtype == dtypes.storage_dtype(dst.dtype)
              else dtypes.cast(dtypes.to_compute(out), dst.dtype).reshape(dst.shape))
    charge("gpsimd", dst, [data, indices])


