"""Data-dependent moves within SBUF: gathers (`gather_flattened`, GpSimd's `local_gather`), partition
shuffles, and the index lists gathers are driven by (`nonzero_with_count`, `sequence_bounds`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core.tensor import NkiTensor, oob
from ..errors import ERR_INVALID_ARG, ERR_SHAPE, fail
from .common import (
    charge,
    check_dtype,
    check_gpsimd_sbuf,
    need_generation,
    output_mask,
    read,
    read_raw,
    write,
)


def nc_stream_shuffle(dst: NkiTensor, src: NkiTensor, shuffle_mask: Any, api: str = "nc_stream_shuffle",
                      mask: np.ndarray | None = None) -> None:
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
    dst.write(out.reshape(dst.shape), output_mask(api, mask, dst.shape))
    charge("vector", dst, [src])


def gather_flattened(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, api: str = "gather_flattened",
                     mask: np.ndarray | None = None) -> None:
    x = read_raw(data).reshape(data.partitions, -1)
    idx = read_raw(indices).astype(np.int64).reshape(indices.partitions, -1)
    if np.any((idx < 0) | (idx >= x.shape[1])):
        raise oob(data.name, 1, int(idx.min()), int(idx.max()), x.shape[1])
    out = np.take_along_axis(x, idx, axis=1)
    dst.write(out.reshape(dst.shape) if out.dtype == dtypes.storage_dtype(dst.dtype)
              else dtypes.cast(dtypes.to_compute(out), dst.dtype).reshape(dst.shape), mask)
    charge("gpsimd", dst, [data, indices])


GPSIMD_CORE_PARTITIONS = 16  # each of the 8 GpSimd cores serves 16 contiguous partitions


def local_gather_cycles(num_valid: int, num_elem: int, itemsize: int) -> float:
    """`150 + (valid * elem) / C`, C = ((28 + t*elem) / (t*elem)) / min(4/dtype_size, elem), t = 4."""
    t = 4
    c = ((28 + t * num_elem) / (t * num_elem)) / min(4 / itemsize, num_elem)
    return cost.GPSIMD_START_CYCLES + num_valid * num_elem / c


def local_gather(dst: NkiTensor, src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, api: str = "local_gather",
                 mask: np.ndarray | None = None) -> None:
    """Each GpSimd core (16 partitions) flattens its 16-partition slice of `index` partition-first, keeps the
    first `num_valid_indices`, and every partition p of the core gathers `num_elem_per_idx` contiguous
    elements of its own flattened free dims at each index: dst[p, k, e] = src[p, idx_core[k] + e]."""
    check_gpsimd_sbuf(api, dst=dst, src_buffer=src_buffer, index=index)
    p = src_buffer.partitions
    if index.partitions != p or p % GPSIMD_CORE_PARTITIONS:
        raise fail(ERR_SHAPE, f"'{api}': src_buffer has {p} partitions and index {index.partitions}; they must be "
                   f"equal and a multiple of {GPSIMD_CORE_PARTITIONS}.",
                   "give src_buffer and index the same partition count, a multiple of 16.")
    check_dtype(api, "index", index, (dtypes.uint16,))
    elem = int(num_elem_per_idx)
    if elem not in (1, 2, 4, 8, 16, 32):
        raise fail(ERR_INVALID_ARG, f"'{api}': num_elem_per_idx={elem}; it must be one of 1, 2, 4, 8, 16, 32.",
                   "gather 1, 2, 4, 8, 16 or 32 contiguous elements per index.")
    cores = p // GPSIMD_CORE_PARTITIONS
    per_core = index.size // cores
    valid = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < valid <= min(per_core, 4096):
        raise fail(ERR_INVALID_ARG, f"'{api}': num_valid_indices={valid}; each core holds {per_core} indices and "
                   "gathers at most 4096.", f"use 1 <= num_valid_indices <= {min(per_core, 4096)}.")
    if dst.dtype != src_buffer.dtype:
        raise fail(ERR_INVALID_ARG, f"'{api}' does not cast: dst `{dst.name}` is {dtypes.name(dst.dtype)}, "
                   f"src_buffer `{src_buffer.name}` is {dtypes.name(src_buffer.dtype)}.",
                   "give dst the dtype of src_buffer.")
    if dst.partitions != p or dst.free_size != valid * elem:
        raise fail(ERR_SHAPE, f"'{api}' writes {p} partitions x {valid * elem} elements "
                   f"({valid} indices x {elem}); dst `{dst.name}` is {dst.shape}.",
                   "shape dst as (partitions, num_valid_indices * num_elem_per_idx) (free dims may be split).")
    x = read_raw(src_buffer).reshape(p, -1)
    idx = read_raw(index).astype(np.int64).reshape(cores, GPSIMD_CORE_PARTITIONS, -1)
    idx = idx.transpose(0, 2, 1).reshape(cores, -1)[:, :valid]            # partition dim first, per core
    cols = idx[:, :, None] + np.arange(elem, dtype=np.int64)             # (cores, valid, elem)
    if cols.min() < 0 or cols.max() >= x.shape[1]:
        raise oob(src_buffer.name, 1, int(cols.min()), int(cols.max()), x.shape[1])
    cols = np.repeat(cols, GPSIMD_CORE_PARTITIONS, axis=0).reshape(p, -1)  # each core's 16 partitions share it
    dst.write(np.take_along_axis(x, cols, axis=1).reshape(dst.shape), output_mask(api, mask, dst.shape))
    charge("gpsimd", dst, [src_buffer, index], local_gather_cycles(valid, elem, src_buffer.itemsize))


def nonzero_with_count(dst: NkiTensor, src: NkiTensor, index_offset: Any = 0, padding_val: Any = -1,
                       api: str = "nonzero_with_count") -> None:
    """On partitions 0, 16, ..., 112 (each GpSimd core's first): the indices of the nonzero elements (+
    index_offset), then padding_val, then the count in the extra last slot. Other partitions are untouched."""
    need_generation(api, 3)
    check_gpsimd_sbuf(api, dst=dst, src=src)
    check_dtype(api, "src", src, (dtypes.float32, dtypes.int32))
    check_dtype(api, "dst", dst, (dtypes.int32,))
    if dst.partitions != src.partitions or dst.free_size != src.free_size + 1:
        raise fail(ERR_SHAPE, f"'{api}': dst `{dst.name}` {dst.shape} must have the partitions of src `{src.name}` "
                   f"{src.shape} and exactly one more free element (for the count).",
                   "allocate dst as (P, T + 1) int32.")
    for name, v in (("index_offset", index_offset), ("padding_val", padding_val)):
        if isinstance(v, NkiTensor) or not float(v).is_integer():
            raise fail(ERR_INVALID_ARG, f"'{api}': {name}={v!r} must be an int32 scalar.", f"pass an integer {name}.")
    rows = np.arange(0, src.partitions, GPSIMD_CORE_PARTITIONS)
    x = read_raw(src).reshape(src.partitions, -1)[rows]
    nz = x != 0
    count = nz.sum(axis=1)
    t = x.shape[1]
    order = np.argsort(~nz, axis=1, kind="stable")                        # nonzero positions first, in order
    found = np.where(np.arange(t) < count[:, None], order + int(index_offset), int(padding_val))
    out = dst.read().reshape(dst.partitions, -1).copy()
    out[rows] = np.concatenate([found, count[:, None]], axis=1).astype(out.dtype)
    dst.write(out.reshape(dst.shape))
    charge("gpsimd", dst, [src], cost.gpsimd_cycles(src.free_size))


def sequence_bounds(dst: NkiTensor, segment_ids: NkiTensor, api: str = "sequence_bounds",
                    mask: np.ndarray | None = None) -> None:
    """For a (1, n) tile of segment IDs: dst[0, 0, i] = first index of i's run of equal IDs, dst[0, 1, i] = one
    past its last; padding (ID 0) gets start n and end -1."""
    check_gpsimd_sbuf(api, dst=dst, segment_ids=segment_ids)
    check_dtype(api, "segment_ids", segment_ids, (dtypes.float32, dtypes.int32))
    check_dtype(api, "dst", dst, (dtypes.float32, dtypes.int32))
    if segment_ids.partitions != 1:
        raise fail(ERR_SHAPE, f"'{api}': segment_ids `{segment_ids.name}` has {segment_ids.partitions} partitions; "
                   "the partition dimension must be 1.", "pass the segment IDs as a (1, n) tile.")
    n = segment_ids.free_size
    if dst.partitions != 1 or dst.free_size != 2 * n:
        raise fail(ERR_SHAPE, f"'{api}': dst `{dst.name}` is {dst.shape}; the bounds of {n} segment IDs are "
                   f"(1, 2, {n}).", f"allocate dst as (1, 2, {n}).")
    s = read(segment_ids).reshape(-1)
    pos = np.arange(n, dtype=np.int64)
    new_run = np.ones(n, dtype=np.bool_)
    new_run[1:] = s[1:] != s[:-1]
    end_run = np.ones(n, dtype=np.bool_)
    end_run[:-1] = s[:-1] != s[1:]
    start = np.maximum.accumulate(np.where(new_run, pos, 0))
    end = np.minimum.accumulate(np.where(end_run, pos + 1, n)[::-1])[::-1]
    pad = s == 0
    out = np.stack([np.where(pad, n, start), np.where(pad, -1, end)]).astype(np.float32)
    write(dst, out.reshape(dst.shape), output_mask(api, mask, dst.shape), api)
    charge("gpsimd", dst, [segment_ids], cost.gpsimd_cycles(n))
