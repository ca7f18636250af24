"""`neuronxcc.nki.isa` (legacy): each call is one instruction and *returns* its result tile; `mask=` and
`dtype=` keywords as in NKI 0.1.

Every keyword a call accepts is one AWS documents for it, and every `mask=` is applied (a mask that fits
neither the instruction's output nor its input is an error): an unknown keyword raises Python's TypeError
instead of being swallowed. Legacy tiles are values whose placement the compiler decides, so a PSUM result
used where the Tensor engine needs SBUF (a transposed tile as a matmul operand) is copied there by the
Vector engine first, as the compiler does, and the copy is costed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes
from ...core import context
from ...core.buffers import PSUM, SBUF
from ...core.tensor import NkiTensor
from ...enums import (  # noqa: F401
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
from ...errors import ERR_INVALID_ARG, NkiValidationError, fail  # noqa: F401
from ...instructions import accumulate as _acc
from ...instructions import dma as _dma
from ...instructions import elementwise as _ew
from ...instructions import gather as _gather
from ...instructions import iota as _iota
from ...instructions import matmul as _mm
from ...instructions import reduce as _red
from ...instructions import rng as _rng
from ...instructions import select as _sel
from ...instructions.common import allocate, broadcast_shape, mark_result, mask_array
from ...instructions.reduce import normalise_axes
from . import constants  # noqa: F401

activation_engine = scalar_engine
# neuronxcc's string modes: "double_row_gen3" is the NeuronCore-v3 (trn2) spelling of fp8 double-row
_PERF_MODES = ("none", "double_row", "double_row_gen3")


def _out(shape: tuple[int, ...], dtype: Any, default: Any, buffer: Any = SBUF) -> NkiTensor:
    return allocate(shape, dtype if dtype is not None else default, buffer)


def _dt(x: Any) -> Any:
    return x.dtype if isinstance(x, NkiTensor) else dtypes.scalar_dtype(x)


def _returned(dst: NkiTensor, mask: Any) -> NkiTensor:
    """The result tile; under `mask=` only the masked elements are its value (an assignment of it into a
    declared tile writes only those)."""
    return mark_result(dst, mask_array(mask))


def _in_sbuf(t: NkiTensor, api: str) -> NkiTensor:
    """A Tensor-engine operand must be in SBUF; a legacy PSUM tile is moved there by the Vector engine."""
    if not isinstance(t, NkiTensor) or t.buffer != PSUM:
        return t
    moved = allocate(t.shape, t.dtype, SBUF)
    _ew.tensor_copy(moved, t, api=f"{api} (PSUM operand to SBUF)")
    return moved


def nc_matmul(stationary: NkiTensor, moving: NkiTensor, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, mask: Any = None, perf_mode: Any = None,
              tile_position: Any = (), tile_size: Any = ()) -> NkiTensor:
    """Returns stationary.T @ moving as a fresh fp32 PSUM tile (accumulate with `psum += ...`)."""
    mode = str(getattr(perf_mode, "value", perf_mode) or "none")
    if mode not in _PERF_MODES:
        raise fail(ERR_INVALID_ARG, f"nc_matmul perf_mode={perf_mode!r} is not a matmul mode of this target.",
                   f"use one of {_PERF_MODES} (nisa.matmul_perf_mode); double_row needs fp8 on NeuronCore-v3+.")
    if mode == "double_row_gen3":
        gen = context.current().target.generation
        if gen != 3:
            raise fail(ERR_INVALID_ARG, f"nc_matmul perf_mode='double_row_gen3' is not supported on "
                       f"{context.current().target.name} (NeuronCore-v{gen}); it is the NeuronCore-v3 mode.",
                       "use perf_mode='double_row' (nisa.matmul_perf_mode.double_row), or target trn2.")
        mode = "double_row"
    stationary, moving = _in_sbuf(stationary, "nc_matmul"), _in_sbuf(moving, "nc_matmul")
    m, n = (stationary.shape[2], moving.shape[2]) if mode == "double_row" else (stationary.free_size, moving.free_size)
    target = context.current().target
    if m > target.gemm_stationary_fmax or n > target.gemm_moving_fmax:  # the documented error, not an allocation's
        _mm.check_matmul("nc_matmul", None, stationary, moving, is_transpose)
    dst = allocate((m, n), moving.dtype if is_transpose else dtypes.float32, PSUM)
    _mm.nc_matmul(dst, stationary, moving, accumulate=False, is_transpose=is_transpose, mask=mask_array(mask),
                  perf_mode=mode, tile_position=tile_position, tile_size=tile_size)
    # under mask= (e.g. a causal block's mask=False) only the masked elements are the result: `psum += ...`
    # and assignments leave the rest of their destination alone
    return _returned(dst, mask)


def nc_transpose(data: NkiTensor, mask: Any = None, dtype: Any = None, engine: Any = engine.unknown) -> NkiTensor:
    """A PF-transpose. Tensor engine (SBUF in, PSUM out) unless the Vector engine is asked for, or the tile
    is in PSUM and fits the Vector engine's 32x32 (SBUF out); a larger PSUM tile is moved to SBUF first.
    A `dtype` different from the data's adds a cast (a copy on the Vector engine), as documented."""
    eng = _mm.engine_name(engine)
    if engine in (None, 0) or getattr(engine, "name", engine) == "unknown":  # pick as the compiler does
        small = data.partitions <= 32 and data.free_size <= 32
        eng = "vector" if data.buffer == PSUM and small else "tensor"
    if eng == "tensor":
        data = _in_sbuf(data, "nc_transpose")
    _mm.check_transpose("nc_transpose", data, eng)
    dst = allocate((data.free_size, data.partitions), data.dtype, PSUM if eng == "tensor" else SBUF)
    m = mask_array(mask)
    _mm.nc_transpose(dst, data, eng, m)
    if m is not None:  # the elements the mask selected, in the transposed layout, are the result
        sel = np.broadcast_to(m, data.shape).reshape(data.partitions, -1).T.reshape(dst.shape)
        mark_result(dst, sel)
    if dtype is not None and dtypes.as_dtype(dtype) != dst.dtype:
        cast = allocate(dst.shape, dtype, SBUF)
        _ew.tensor_copy(cast, dst, mask=m if m is None else dst.storage.result_mask, api="nc_transpose (cast)")
        dst = mark_result(cast, None if m is None else dst.storage.result_mask)
    return dst


def activation(op: Any, data: NkiTensor, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = None, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.activation(dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd, mask_array(mask))
    return _returned(dst, mask)


def activation_reduce(op: Any, data: NkiTensor, reduce_op: Any, reduce_res: NkiTensor, bias: Any = None,
                      scale: Any = 1.0, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.activation(dst, op, data, bias, scale, reduce_op, reduce_res, None, mask_array(mask), api="activation_reduce")
    return _returned(dst, mask)


def tensor_tensor(data1: Any, data2: Any, op: Any, dtype: Any = None, mask: Any = None,
                  engine: Any = None) -> NkiTensor:
    dst = _out(broadcast_shape("tensor_tensor", data1, data2), dtype, dtypes.result_dtype(_dt(data1), _dt(data2)))
    _ew.tensor_tensor(dst, data1, data2, op, engine, mask_array(mask))
    return _returned(dst, mask)


def tensor_scalar(data: NkiTensor, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, dtype: Any = None, mask: Any = None,
                  engine: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.tensor_scalar(dst, data, op0, operand0, reverse0, op1, operand1, reverse1, engine, mask_array(mask))
    return _returned(dst, mask)


def scalar_tensor_tensor(data: NkiTensor, op0: Any, operand0: Any, op1: Any, operand1: Any, reverse0: bool = False,
                         reverse1: bool = False, dtype: Any = None, mask: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, dtypes.result_dtype(_dt(data), _dt(operand1)))
    _ew.scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0, reverse1, mask_array(mask))
    return _returned(dst, mask)


def tensor_reduce(op: Any, data: NkiTensor, axis: Any, mask: Any = None, dtype: Any = None, negate: bool = False,
                  keepdims: bool = False) -> NkiTensor:
    axes = normalise_axes(data, axis, "tensor_reduce", legacy=True)
    shape = tuple(1 if i in axes else s for i, s in enumerate(data.shape))
    if not keepdims:
        shape = tuple(s for i, s in enumerate(data.shape) if i not in axes)
        shape = shape + (1,) * (2 - len(shape)) if len(shape) < 2 else shape
    dst = _out(shape, dtype, data.dtype)
    _red.tensor_reduce(dst, op, data, axes, negate, keepdims, mask_array(mask), legacy=True)
    return dst


def tensor_partition_reduce(op: Any, data: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out((1,) + data.shape[1:], dtype, data.dtype)
    _red.tensor_partition_reduce(dst, op, data, mask=mask_array(mask))
    return dst


def tensor_copy(src: NkiTensor, mask: Any = None, dtype: Any = None, engine: Any = None) -> NkiTensor:
    dst = _out(src.shape, dtype, src.dtype)
    _ew.tensor_copy(dst, src, engine, mask_array(mask))
    return _returned(dst, mask)


def _dynamic_free(view: Any, api: str, role: str) -> None:
    """A dynamic copy reads its offset from SBUF for the free dimensions only (documented); a partition
    index read from a tile is an indirect DMA (nl.load / nl.store), not this instruction."""
    if not isinstance(view, NkiTensor) or view.buffer not in (SBUF, PSUM):
        raise fail(ERR_INVALID_ARG, f"{api}: `{role}` must be a tile in SBUF or PSUM.",
                   "index an on-chip tile at the dynamic offset (load it from HBM first).")
    if any(b.runtime and b.dim == 0 for b in view.bounds):
        raise fail(ERR_INVALID_ARG, f"{api}: the dynamic offset indexes the partition dimension of `{role}`.",
                   "use the dynamic offset in a free dimension; move partitions with an indirect nl.load/nl.store.")


def tensor_copy_dynamic_src(src: NkiTensor, mask: Any = None, dtype: Any = None, engine: Any = None) -> NkiTensor:
    """A copy whose source sits at an offset read from SBUF while the kernel runs (`t[i_p, idx[0, b] + i_f]`)."""
    _dynamic_free(src, "tensor_copy_dynamic_src", "src")
    dst = _out(src.shape, dtype, src.dtype)
    _ew.tensor_copy(dst, src, engine, mask_array(mask), api="tensor_copy_dynamic_src")
    return _returned(dst, mask)


def tensor_copy_dynamic_dst(dst: NkiTensor, src: Any, mask: Any = None, dtype: Any = None,
                            engine: Any = None) -> None:
    """A copy into `dst` at an offset read from SBUF while the kernel runs (the scatter of the above)."""
    _dynamic_free(dst, "tensor_copy_dynamic_dst", "dst")
    _ew.tensor_copy(dst, src, engine, mask_array(mask), api="tensor_copy_dynamic_dst")


def tensor_copy_predicated(src: Any, dst: NkiTensor, predicate: Any, mask: Any = None, dtype: Any = None,
                           reverse_pred: bool = False) -> None:
    _sel.tensor_copy_predicated(dst, src, predicate, reverse_pred, mask_array(mask))


def memset(shape: Any, value: Any, dtype: Any, mask: Any = None, engine: Any = None) -> NkiTensor:
    dst = allocate(shape, dtype, SBUF)
    _ew.memset(dst, value, engine, mask_array(mask))
    return _returned(dst, mask)


def iota(expr: Any, dtype: Any, mask: Any = None) -> NkiTensor:
    values = np.asarray(getattr(expr, "values", expr))
    shape = values.shape if values.ndim >= 2 else (1,) * (2 - values.ndim) + values.shape
    dst = allocate(shape, dtype, SBUF)
    _iota.iota(dst, expr, mask=mask_array(mask))
    return _returned(dst, mask)


def affine_select(pred: Any, on_true_tile: NkiTensor, on_false_value: Any, mask: Any = None,
                  dtype: Any = None) -> NkiTensor:
    dst = _out(on_true_tile.shape, dtype, on_true_tile.dtype)
    _sel.affine_select(dst, pred, on_true_tile, on_false_value, mask=mask_array(mask))
    return _returned(dst, mask)


def bn_stats(data: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out((data.partitions, 6), dtype, dtypes.float32)
    _red.bn_stats(dst, data, mask=mask_array(mask))
    return dst


def bn_aggr(data: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out((data.partitions, 2), dtype, dtypes.float32)
    _red.bn_aggr(dst, data, mask=mask_array(mask))
    return _returned(dst, mask)


def reciprocal(data: NkiTensor, dtype: Any = None, mask: Any = None, engine: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _ew.tensor_scalar(dst, data, "reciprocal", 0.0, engine=engine, mask=mask_array(mask), api="reciprocal")
    return _returned(dst, mask)


def dropout(data: NkiTensor, prob: Any, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _rng.dropout(dst, data, prob, mask=mask_array(mask))
    return _returned(dst, mask)


def tensor_tensor_scan(data0: NkiTensor, data1: NkiTensor, initial: Any, op0: Any, op1: Any, reverse0: bool = False,
                       reverse1: bool = False, dtype: Any = None, mask: Any = None) -> NkiTensor:
    dst = _out(data0.shape, dtype, data0.dtype)
    _acc.tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0, reverse1, mask=mask_array(mask))
    return _returned(dst, mask)


def tensor_scalar_cumulative(src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, dtype: Any = None,
                             mask: Any = None, dst: NkiTensor | None = None, reverse0: bool = False) -> NkiTensor:
    """reg = op1(src[:, i] op0 imm0, reg); res[:, i] = reg. Written into `dst=` when given (the later
    neuronxcc signature), else into a new tile; either is returned."""
    out = _out(src.shape, dtype, src.dtype) if dst is None else dst
    _acc.tensor_scalar_cumulative(out, src, op0, op1, imm0, imm1, reduce_cmd, reverse0, mask=mask_array(mask))
    return out if dst is not None else _returned(out, mask)


def tensor_scalar_reduce(data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any, reduce_res: NkiTensor,
                         reverse0: bool = False, dtype: Any = None, mask: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _acc.tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0, mask=mask_array(mask))
    return _returned(dst, mask)


def max8(src: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out((src.partitions, 8), dtype, src.dtype)
    _sel.max8(dst, src, mask=mask_array(mask))
    return dst


def nc_find_index8(data: NkiTensor, vals: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    dst = _out((data.partitions, 8), dtype, dtypes.uint32)
    _sel.nc_find_index8(dst, data, vals, mask=mask_array(mask))
    return dst


def nc_match_replace8(data: NkiTensor, vals: NkiTensor, imm: Any, dst_idx: Any = None, mask: Any = None,
                      dtype: Any = None) -> NkiTensor:
    dst = _out(data.shape, dtype, data.dtype)
    _sel.nc_match_replace8(dst, data, vals, imm, dst_idx, mask=mask_array(mask))
    return _returned(dst, mask)


def nc_stream_shuffle(src: NkiTensor, dst: NkiTensor, shuffle_mask: Any, dtype: Any = None, mask: Any = None) -> None:
    _gather.nc_stream_shuffle(dst, src, shuffle_mask, mask=mask_array(mask))


def local_gather(src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1, num_valid_indices: Any = None,
                 mask: Any = None) -> NkiTensor:
    """Returns (P, *index free dims, 16, num_elem_per_idx) when every index is valid (the documented example's
    (128, 4, 16, 4) for a (128, 4) index), else (P, num_valid_indices, num_elem_per_idx)."""
    p, elem = src_buffer.partitions, int(num_elem_per_idx)
    per_core = index.size // max(p // _gather.GPSIMD_CORE_PARTITIONS, 1)
    if num_valid_indices is None or int(num_valid_indices) == per_core:
        shape = (p,) + tuple(index.shape[1:]) + (_gather.GPSIMD_CORE_PARTITIONS, elem)
    else:
        shape = (p, int(num_valid_indices), elem)
    dst = _out(shape, None, src_buffer.dtype)
    _gather.local_gather(dst, src_buffer, index, elem, num_valid_indices, mask=mask_array(mask))
    return _returned(dst, mask)


def sequence_bounds(segment_ids: NkiTensor, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """(1, n) segment IDs -> (1, 2, n) tile of [start, end) bounds (dtype defaults to the IDs' dtype)."""
    dst = _out((segment_ids.partitions, 2, segment_ids.free_size), dtype, segment_ids.dtype)
    _gather.sequence_bounds(dst, segment_ids, mask=mask_array(mask))
    return _returned(dst, mask)


def select_reduce(dst: Any = None, predicate: Any = None, on_true: Any = None, on_false: Any = None,
                  reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = "maximum",
                  reverse_pred: bool = False, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Writes into `dst` (as AWS's signature has it) and returns it; without `dst` a new tile."""
    if predicate is None or on_true is None or on_false is None:
        raise fail(ERR_INVALID_ARG, "select_reduce needs predicate=, on_true= and on_false=.",
                   "pass them as keywords: select_reduce(dst=..., predicate=..., on_true=..., on_false=...).")
    if dst is None:
        dst = _out(on_true.shape, dtype, on_true.dtype)
    _sel.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_op, reverse_pred, mask=mask_array(mask),
                       reduce_cmd=reduce_cmd)
    return dst


def range_select(on_true_tile: NkiTensor, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = None, reduce_res: Any = None, reduce_op: Any = "maximum", range_start: int = 0,
                 on_false_value: float = float(np.finfo(np.float32).min), dtype: Any = None,
                 mask: Any = None) -> NkiTensor:
    dst = _out(on_true_tile.shape, dtype, on_true_tile.dtype)
    _sel.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_res, reduce_op, range_start,
                      on_false_value, mask=mask_array(mask),
                      reduce_cmd=reduce_cmd if reduce_cmd is not None else "idle")
    return _returned(dst, mask)


def dma_copy(dst: NkiTensor | None = None, src: NkiTensor | None = None, mask: Any = None, dst_rmw_op: Any = None,
             oob_mode: Any = oob_mode.error, dge_mode: Any = dge_mode.unknown) -> None:
    """Legacy keyword form `dma_copy(dst=..., src=...)`."""
    if dst is None or src is None:
        raise fail(ERR_INVALID_ARG, "dma_copy needs both dst= and src=.", "pass dst=<view> and src=<view>.")
    _dma.dma_copy(dst, src, mask_array(mask), oob_mode, dst_rmw_op)


# the permutation AWS documents for a DMA transpose of a 2-, 3- and 4-D tile
_DMA_TRANSPOSE = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(src: NkiTensor, axes: Any = None, mask: Any = None, dtype: Any = None,
                  dge_mode: Any = dge_mode.unknown) -> NkiTensor:
    """Transpose on the DMA engine (2-D: [1, 0]; 3-D: [2, 1, 0]; 4-D: [3, 1, 2, 0], or `axes=`), into a new
    SBUF tile. `dge_mode` picks how descriptors are generated (software / hardware DGE): same data."""
    order = tuple(int(a) for a in axes) if axes is not None else _DMA_TRANSPOSE.get(src.ndim)
    if order is None:
        raise fail(ERR_INVALID_ARG, f"dma_transpose of a {src.ndim}-D tile; 2-, 3- and 4-D tiles are supported.",
                   "reshape the tile to 2-4 dims first.")
    dst = _out(tuple(src.shape[d] for d in order), dtype, src.dtype)
    _dma.dma_transpose(dst, src, order, mask=mask_array(mask))
    return _returned(dst, mask)


def get_nc_version() -> nc_version:
    return nc_version(context.current().target.generation)
