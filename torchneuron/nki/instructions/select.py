"""Selection instructions: affine/range/predicated selects with optional reductions (GpSimd and Vector),
and the top-8 helpers `max8`, `nc_find_index8`, `nc_match_replace8`.

`mask=` (legacy) is honoured everywhere: over the output it limits what is written; over the input of a
top-8 search it limits which elements are candidates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import alu
from ..core.tensor import NkiTensor
from ..errors import ERR_DIM_LIMIT, fail
from .common import (
    charge,
    check_on_chip,
    check_partitions,
    input_mask,
    mask_array,
    output_mask,
    read,
    reduce_rows,
    write,
)
from .accumulate import fold_registers
from .iota import pattern_values

_NO_MATCH = np.iinfo(np.uint32).max


def affine_select(dst: NkiTensor, predicate: Any, on_true_tile: Any, on_false_value: Any, api: str = "affine_select",
                  mask: np.ndarray | None = None) -> None:
    check_on_chip(dst, api, "dst")
    check_partitions(dst, api, "dst")
    pred = np.broadcast_to(mask_array(predicate) if not isinstance(predicate, np.ndarray) else predicate, dst.shape)
    write(dst, np.where(pred, read(on_true_tile, mask), np.float32(on_false_value)), output_mask(api, mask, dst.shape),
          api)
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
    pred = np.broadcast_to(_lined_up_from_the_partition_dim(pred, dst.shape), dst.shape)
    if mask is not None:
        pred = pred & output_mask(api, mask, dst.shape)
    src_vals = read(src) if isinstance(src, NkiTensor) else np.float32(src)
    dst.write(dtypes.cast(np.broadcast_to(src_vals, dst.shape), dst.dtype), pred)
    charge("vector", dst, [src, predicate])


def _lined_up_from_the_partition_dim(pred: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A predicate with fewer dims than the destination lines up from the partition dim: its free dims are
    the destination's first ones and it is spread along the rest ((P, 1) against (P, 1, 4, 130), (P, 8)
    against (P, 8, 4) in AWS's paged-attention kernels). NumPy would align it with the last dims instead."""
    if 1 < pred.ndim < len(shape):
        return pred.reshape(pred.shape + (1,) * (len(shape) - pred.ndim))
    return pred


def _reduce_into(api: str, reduce_res: NkiTensor | None, reduce_op: Any, out: np.ndarray,
                 keep: np.ndarray | None, reduce_cmd: Any = "idle") -> None:
    """The free-dim reduction of an instruction's result (masked-off elements excluded), through the Vector
    engine's accumulators as `reduce_cmd` says, into `reduce_res`."""
    cmd = str(getattr(reduce_cmd, "name", reduce_cmd) or "idle")
    if reduce_res is None and cmd == "idle":
        return
    name = alu.op_name(reduce_op, "reduce_op")
    if keep is not None:
        out = np.where(keep, out, alu.REDUCE.get(name, (None, 0.0))[1])
    red = alu.reduce(name, out.reshape(out.shape[0], -1), (1,), True)
    red = fold_registers(api, np.asarray(red, np.float32).reshape(-1, 1), name, reduce_cmd)
    if reduce_res is not None:
        write(reduce_res, reduce_rows(api, reduce_res, red), None, api)


def select_reduce(dst: NkiTensor, predicate: Any, on_true: Any, on_false: Any, reduce_res: NkiTensor | None = None,
                  reduce_op: Any = "maximum", reverse_pred: bool = False, api: str = "select_reduce",
                  mask: np.ndarray | None = None, reduce_cmd: Any = "idle") -> None:
    pred = read(predicate) != 0
    if reverse_pred:
        pred = ~pred
    out = np.broadcast_to(np.where(pred, read(on_true), read(on_false)), dst.shape)
    keep = output_mask(api, mask, dst.shape)
    write(dst, out, keep, api)
    _reduce_into(api, reduce_res, reduce_op, out, keep, reduce_cmd)
    charge("vector", dst, [predicate, on_true, on_false])


def range_select(dst: NkiTensor, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_res: NkiTensor | None = None, reduce_op: Any = "maximum", range_start: int = 0,
                 on_false_value: float = float(np.finfo(np.float32).min), api: str = "range_select",
                 mask: np.ndarray | None = None, reduce_cmd: Any = "reset_reduce") -> None:
    x = read(on_true_tile).reshape(dst.partitions, -1)
    idx = (np.arange(x.shape[1], dtype=np.float32) + range_start)[None, :]
    b0 = read(bound0).reshape(-1, 1) if isinstance(bound0, NkiTensor) else np.float32(bound0)
    b1 = read(bound1).reshape(-1, 1) if isinstance(bound1, NkiTensor) else np.float32(bound1)
    inside = (alu.binary(alu.op_name(comp_op0), idx, b0) != 0) & (alu.binary(alu.op_name(comp_op1), idx, b1) != 0)
    out = np.where(inside, x, np.float32(on_false_value)).reshape(dst.shape)
    keep = output_mask(api, mask, dst.shape)
    write(dst, out, keep, api)
    _reduce_into(api, reduce_res, reduce_op, out, keep, reduce_cmd)
    charge("vector", dst, [on_true_tile, bound0, bound1])


def _candidates(api: str, data: NkiTensor, mask: np.ndarray | None, fill: float) -> np.ndarray:
    """The input rows of a top-8 instruction, masked-off elements replaced so they never win."""
    x = read(data)
    keep = input_mask(api, mask, data.shape) if mask is not None else None
    if keep is not None:
        x = np.where(keep, x, np.float32(fill))
    return x.reshape(data.partitions, -1)


def _split_mask(api: str, mask: np.ndarray | None, data: NkiTensor, dst: NkiTensor) -> tuple[Any, Any]:
    """A mask over a top-8 instruction applies to its input when it has the input's shape, else to the
    (P, 8) output."""
    if mask is None:
        return None, None
    try:
        np.broadcast_to(mask, data.shape)
        return mask, None
    except ValueError:
        return None, output_mask(api, mask, dst.shape)


def max8(dst: NkiTensor, src: NkiTensor, api: str = "max8", mask: np.ndarray | None = None) -> None:
    in_mask, out_mask = _split_mask(api, mask, src, dst)
    x = _candidates(api, src, in_mask, -np.inf)
    if x.shape[1] < 8:
        raise fail(ERR_DIM_LIMIT, f"'{api}' needs at least 8 elements per partition, got {x.shape[1]}.",
                   "pad the tile.")
    top = -np.sort(-x, axis=1)[:, :8]
    write(dst, top.reshape(dst.shape), out_mask, api)
    charge("vector", dst, [src], max(cost.MIN_II, src.free_size))


def nc_find_index8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, api: str = "nc_find_index8",
                   mask: np.ndarray | None = None) -> None:
    in_mask, out_mask = _split_mask(api, mask, data, dst)
    x = _candidates(api, data, in_mask, np.nan)  # NaN matches nothing
    v = read(vals).reshape(vals.partitions, -1)[:, :8]
    hit = x[:, None, :] == v[:, :, None]
    idx = np.where(hit.any(axis=2), hit.argmax(axis=2), _NO_MATCH).astype(np.int64)
    write(dst, idx.reshape(dst.shape), out_mask, api)
    charge("vector", dst, [data, vals], max(cost.MIN_II, data.free_size))


def nc_match_replace8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, imm: float,
                      dst_idx: NkiTensor | None = None, api: str = "nc_match_replace8",
                      mask: np.ndarray | None = None) -> None:
    """Each of the eight values replaces its first remaining match with `imm`; masked-off elements are
    neither matched nor written."""
    keep = output_mask(api, mask, data.shape) if mask is not None else None
    x = read(data).reshape(data.partitions, -1).copy()
    search = x.copy() if keep is None else np.where(keep.reshape(x.shape), x, np.nan)
    v = read(vals).reshape(vals.partitions, -1)[:, :8]
    found = np.full(v.shape, _NO_MATCH, dtype=np.int64)
    for k in range(v.shape[1]):
        hit = search == v[:, k:k + 1]
        rows = hit.any(axis=1)
        col = hit.argmax(axis=1)
        x[rows, col[rows]] = np.float32(imm)
        search[rows, col[rows]] = np.nan
        found[rows, k] = col[rows]
    write(dst, x.reshape(dst.shape), keep if keep is None or dst.shape == data.shape else None, api)
    if dst_idx is not None:
        write(dst_idx, found.reshape(dst_idx.shape), None, api)
    charge("vector", dst, [data, vals], max(cost.MIN_II, data.free_size))
