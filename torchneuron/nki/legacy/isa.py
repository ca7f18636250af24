"""`neuronxcc.nki.isa` (legacy): each call is one instruction and *returns* its result tile; `mask=` and
`dtype=` keywords as in NKI 0.1."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import context
from ..core.buffers import PSUM, SBUF
from ..core.tensor import NkiTensor
from ..enums import (  # noqa: F401
    dge_mode,
    engine,
    gpsimd_engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)
from ..errors import ERR_INVALID_ARG, NkiValidationError, fail  # noqa: F401
from ..ops import dma as _dma
from ..ops import elementwise as _ew
from ..ops import matmul as _mm
from ..ops import misc as _misc
from ..ops import reduce as _red
from ..ops.common import allocate, mask_array
from ..ops.reduce import normalise_axes

activation_engine = scalar_engine


def _out(shape: tuple[int, ...], dtype: Any, default: Any, buffer: Any = SBUF) -> NkiTensor:
    return allocate(shape, dtype if dtype is not None else default, buffer)


def _dt(x: Any) -> Any:
    return x.dtype if isinstance(x, NkiTensor) else dtypes.scalar_dtype(x)


def nc_matmul(stationary: NkiTensor, moving: NkiTensor, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, mask: Any = None,
              **kwargs: Any) -> NkiTensor:
    """Returns stationary.T @ moving as a fresh fp32 PSUM tile (accumulate with `psum += ...`)."""
    _mm.check_matmul("nc_matmul", None, stationary, moving, is_transpose)
    dst = allocate((stationary.free_size, moving.free_size),
                   moving.dtype if is_transpose else dtypes.float32, PSUM)
    _mm.nc_matmul(dst, stationary, moving, accumulate=False, is_transpose=is_transpose, mask=mask_array(mask))
    return dst


def nc_transpose(data: NkiTensor, engine: Any = engine.unknown, mask: Any = None, dtype: Any = None,
                 **kwargs: Any) -> NkiTensor:
    vector = _mm.engine_name(engine) == "vector"
    _mm.check_transpose("nc_transpose", data, "vector" if vector else "tensor")
    dst = allocate((data.free_size, data.partitions), dtype or data.dtype, SBUF if vector else PSUM)
    _mm.nc_transpose(dst, data, engine, mask_array(mask))
    return dst


def activation(op: Any, data: NkiTensor, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = None, mask: Any = None, dtype: Any = None,
               **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.activation(dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd, mask_array(mask))
    return dst


def activation_reduce(op: Any, data: NkiTensor, reduce_op: Any, reduce_res: NkiTensor, bias: Any = None,
                      scale: Any = 1.0, mask: Any = None, dtype: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.activation(dst, op, data, bias, scale, reduce_op, reduce_res, None, mask_array(mask), api="activation_reduce")
    return dst


def tensor_tensor(data1: Any, data2: Any, op: Any, dtype: Any = None, mask: Any = None, engine: Any = None,
                  **kwargs: Any) -> NkiTensor:
    from ..ops.common import broadcast_shape
    dst = _out(broadcast_shape("tensor_tensor", data1, data2), dtype, dtypes.result_dtype(_dt(data1), _dt(data2)))
    _ew.tensor_tensor(dst, data1, data2, op, engine, mask_array(mask))
    return dst


def tensor_scalar(data: NkiTensor, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, dtype: Any = None, mask: Any = None,
                  engine: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.tensor_scalar(dst, data, op0, operand0, reverse0, op1, operand1, reverse1, engine, mask_array(mask))
    return dst


def scalar_tensor_tensor(data: NkiTensor, op0: Any, operand0: Any, op1: Any, operand1: Any, reverse0: bool = False,
                         reverse1: bool = False, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, dtypes.result_dtype(_dt(data), _dt(operand1)))
    _ew.scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0, reverse1, mask_array(mask))
    return dst


def tensor_reduce(op: Any, data: NkiTensor, axis: Any, negate: bool = False, keepdims: bool = False,
                  dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    axes = normalise_axes(data, axis, "tensor_reduce")
    shape = tuple(1 if i in axes else s for i, s in enumerate(data.shape))
    if not keepdims:
        shape = tuple(s for i, s in enumerate(data.shape) if i not in axes)
        shape = shape + (1,) * (2 - len(shape)) if len(shape) < 2 else shape
    dst = _out(shape, dtype, data.dtype)
    _red.tensor_reduce(dst, op, data, axes, negate, keepdims, mask_array(mask))
    return dst


def tensor_partition_reduce(op: Any, data: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out((1,) + data.shape[1:], dtype, data.dtype)
    _red.tensor_partition_reduce(dst, op, data)
    return dst


def tensor_copy(src: NkiTensor, dtype: Any = None, mask: Any = None, engine: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(src.shape, dtype, src.dtype)
    _ew.tensor_copy(dst, src, engine, mask_array(mask))
    return dst


def tensor_copy_predicated(src: Any, dst: NkiTensor, predicate: Any, mask: Any = None, reverse_pred: bool = False,
                           **kwargs: Any) -> None:
    _misc.tensor_copy_predicated(dst, src, predicate, reverse_pred, mask_array(mask))


def memset(shape: Any, value: Any, dtype: Any, mask: Any = None, engine: Any = None, **kwargs: Any) -> NkiTensor:
    dst = allocate(shape, dtype, SBUF)
    _ew.memset(dst, value, engine, mask_array(mask))
    return dst


def iota(expr: Any, dtype: Any, mask: Any = None, **kwargs: Any) -> NkiTensor:
    values = np.asarray(getattr(expr, "values", expr))
    shape = values.shape if values.ndim >= 2 else (1,) * (2 - values.ndim) + values.shape
    dst = allocate(shape, dtype, SBUF)
    _misc.iota(dst, expr)
    return dst


def affine_select(pred: Any, on_true_tile: NkiTensor, on_false_value: Any, dtype: Any = None, mask: Any = None,
                  **kwargs: Any) -> NkiTensor:
    dst = _out(on_true_tile.shape, dtype, on_true_tile.dtype)
    _misc.affine_select(dst, pred, on_true_tile, on_false_value, mask=mask_array(mask))
    return dst


def bn_stats(data: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out((data.partitions, 6), dtype, dtypes.float32)
    _red.bn_stats(dst, data)
    return dst


def bn_aggr(data: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out((data.partitions, 2), dtype, dtypes.float32)
    _red.bn_aggr(dst, data)
    return dst


def reciprocal(data: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.tensor_scalar(dst, data, "reciprocal", 0.0, mask=mask_array(mask), api="reciprocal")
    return dst


def dropout(data: NkiTensor, prob: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _misc.dropout(dst, data, prob)
    return dst


def tensor_tensor_scan(data0: NkiTensor, data1: NkiTensor, initial: Any, op0: Any, op1: Any, reverse0: bool = False,
                       reverse1: bool = False, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data0.shape, dtype, data0.dtype)
    _misc.tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0, reverse1)
    return dst


def max8(src: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out((src.partitions, 8), dtype, src.dtype)
    _misc.max8(dst, src)
    return dst


def nc_find_index8(data: NkiTensor, vals: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out((data.partitions, 8), dtype, dtypes.uint32)
    _misc.nc_find_index8(dst, data, vals)
    return dst


def nc_match_replace8(data: NkiTensor, vals: NkiTensor, imm: Any, dst_idx: Any = None, dtype: Any = None,
                      mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _misc.nc_match_replace8(dst, data, vals, imm, dst_idx)
    return dst


def nc_stream_shuffle(src: NkiTensor, dst: NkiTensor, shuffle_mask: Any, mask: Any = None, **kwargs: Any) -> None:
    _misc.nc_stream_shuffle(dst, src, shuffle_mask)


def local_gather(src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1, num_valid_indices: Any = None,
                 mask: Any = None, **kwargs: Any) -> NkiTensor:
    """Returns (P, *index free dims, 16, num_elem_per_idx) when every index is valid (the documented example's
    (128, 4, 16, 4) for a (128, 4) index), else (P, num_valid_indices, num_elem_per_idx)."""
    p, elem = src_buffer.partitions, int(num_elem_per_idx)
    per_core = index.size // max(p // _misc.GPSIMD_CORE_PARTITIONS, 1)
    if num_valid_indices is None or int(num_valid_indices) == per_core:
        shape = (p,) + tuple(index.shape[1:]) + (_misc.GPSIMD_CORE_PARTITIONS, elem)
    else:
        shape = (p, int(num_valid_indices), elem)
    dst = _out(shape, None, src_buffer.dtype)
    _misc.local_gather(dst, src_buffer, index, elem, num_valid_indices)
    return dst


def sequence_bounds(segment_ids: NkiTensor, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    """(1, n) segment IDs -> (1, 2, n) tile of [start, end) bounds (dtype defaults to the IDs' dtype)."""
    dst = _out((segment_ids.partitions, 2, segment_ids.free_size), dtype, segment_ids.dtype)
    _misc.sequence_bounds(dst, segment_ids)
    return dst


def select_reduce(predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None, reduce_op: Any = "maximum",
                  reverse_pred: bool = False, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    dst = _out(on_true.shape, dtype, on_true.dtype)
    _misc.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_op, reverse_pred)
    return dst


def range_select(on_true_tile: NkiTensor, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = None, reduce_res: Any = None, reduce_op: Any = "maximum", range_start: int = 0,
                 on_false_value: float = float(np.finfo(np.float32).min), dtype: Any = None, mask: Any = None,
                 **kwargs: Any) -> NkiTensor:
    dst = _out(on_true_tile.shape, dtype, on_true_tile.dtype)
    _misc.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_res, reduce_op, range_start,
                       on_false_value)
    return dst


def tensor_scalar_reduce(data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any, reduce_res: NkiTensor,
                         reverse0: bool = False, dtype: Any = None, mask: Any = None, **kwargs: Any) -> NkiTensor:
    from ..current import isa as _cur
    dst = _out(data.shape, dtype, data.dtype)
    _cur.tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0)
    return dst


def dma_copy(dst: NkiTensor | None = None, src: NkiTensor | None = None, mask: Any = None, dst_rmw_op: Any = None,
             oob_mode: Any = oob_mode.error, dge_mode: Any = dge_mode.unknown, **kwargs: Any) -> None:
    """Legacy keyword form `dma_copy(dst=..., src=...)`."""
    if dst is None or src is None:
        raise fail(ERR_INVALID_ARG, "dma_copy needs both dst= and src=.", "pass dst=<view> and src=<view>.")
    _dma.dma_copy(dst, src, mask_array(mask), oob_mode, dst_rmw_op)


def get_nc_version() -> nc_version:
    return nc_version(context.current().target.generation)
