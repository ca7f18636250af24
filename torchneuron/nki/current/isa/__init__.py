"""`nki.isa` (NKI >= 0.3): one call is one instruction writing `dst` (first argument); no masks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import cost, dtypes
from ...core import context
from ...core.tensor import NkiTensor
from ...enums import (  # noqa: F401
    activation_engine,
    dependency,
    dge_mode,
    dma_engine,
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
from ...instructions import mx as _mx
from ...instructions import reduce as _red
from ...instructions import rng as _rng
from ...instructions import select as _sel
from ...instructions.common import check_on_chip, read, write
from ..registers import register_alloc, register_load, register_move, register_store  # noqa: F401


def nc_matmul(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, accumulate: bool | None = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = matmul_perf_mode.none,
              name: str | None = None) -> None:
    _mm.nc_matmul(dst, stationary, moving, accumulate, is_transpose, perf_mode=perf_mode,
                  tile_position=tile_position, tile_size=tile_size)


def nc_matmul_mx(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, stationary_scale: NkiTensor,
                 moving_scale: NkiTensor, tile_position: Any = None, tile_size: Any = None, accumulate: Any = None,
                 name: str | None = None) -> None:
    """MXFP8 matmul with dequantization (NeuronCore-v4); see instructions.mx for the layouts."""
    _mx.nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, accumulate)


def quantize_mx(dst: NkiTensor, src: NkiTensor, dst_scale: NkiTensor, name: str | None = None) -> None:
    """bf16/fp16 -> 4-packed MXFP8 data and uint8 scales (NeuronCore-v4)."""
    _mx.quantize_mx(dst, src, dst_scale)


def nc_transpose(dst: NkiTensor, data: NkiTensor, engine: Any = engine.unknown, name: str | None = None) -> None:
    _mm.nc_transpose(dst, data, engine)


def activation(dst: NkiTensor, op: Any, data: NkiTensor, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, name: str | None = None) -> None:
    _ew.activation(dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd)


def activation_reduce(dst: NkiTensor, op: Any, data: NkiTensor, reduce_op: Any, reduce_res: NkiTensor, bias: Any = None,
                      scale: Any = 1.0, name: str | None = None) -> None:
    _ew.activation(dst, op, data, bias, scale, reduce_op, reduce_res, None, api="activation_reduce")


def tensor_tensor(dst: NkiTensor, data1: Any, data2: Any, op: Any, engine: Any = engine.unknown,
                  name: str | None = None) -> None:
    _ew.tensor_tensor(dst, data1, data2, op, engine)


def tensor_scalar(dst: NkiTensor, data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, engine: Any = engine.unknown,
                  name: str | None = None) -> None:
    _ew.tensor_scalar(dst, data, op0, operand0, reverse0, op1, operand1, reverse1, engine)


def scalar_tensor_tensor(dst: NkiTensor, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any,
                         reverse0: bool = False, reverse1: bool = False, reduce_cmd: Any = reduce_cmd.reset_reduce,
                         reduce_op: Any = Ellipsis, reduce_res: Any = None, name: str | None = None) -> None:
    """(data op0 operand0) op1 operand1; with `reduce_op`, its free-dim reduction into the Vector
    accumulators and `reduce_res` (as tensor_scalar_reduce)."""
    _ew.scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0, reverse1)
    _acc.vector_reduce("scalar_tensor_tensor", dst, reduce_op, reduce_res, reduce_cmd)


def tensor_reduce(dst: NkiTensor, op: Any, data: NkiTensor, axis: Any, negate: bool = False, keepdims: bool = False,
                  name: str | None = None) -> None:
    _red.tensor_reduce(dst, op, data, axis, negate, keepdims)


def tensor_partition_reduce(dst: NkiTensor, op: Any, data: NkiTensor, name: str | None = None) -> None:
    _red.tensor_partition_reduce(dst, op, data)


def tensor_scalar_reduce(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: Any = None, reverse0: bool = False, reduce_cmd: Any = reduce_cmd.reset_reduce,
                         reduce_init: Any = None, reduce_res_negate: bool = False, name: str | None = None) -> None:
    """tensor_scalar, plus the free-dim reduction of its result into `reduce_res` (P, 1)."""
    _acc.tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0, reduce_init,
                              reduce_res_negate, reduce_cmd=reduce_cmd)


def tensor_scalar_cumulative(dst: NkiTensor, src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, name: str | None = None) -> None:
    """reg = op1(src[:, i] op0 imm0, reg); dst[:, i] = reg: a running reduction along the free dim."""
    _acc.tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1, reduce_cmd)


def tensor_tensor_scan(dst: NkiTensor, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, name: str | None = None) -> None:
    _acc.tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0, reverse1)


def tensor_copy(dst: NkiTensor, src: NkiTensor, engine: Any = engine.unknown, name: str | None = None) -> None:
    _ew.tensor_copy(dst, src, engine, scalar_from_v3=True)


def tensor_copy_predicated(dst: NkiTensor, src: Any, predicate: Any, reverse_pred: bool = False,
                           name: str | None = None) -> None:
    _sel.tensor_copy_predicated(dst, src, predicate, reverse_pred)


def memset(dst: NkiTensor, value: Any, engine: Any = engine.unknown, name: str | None = None) -> None:
    if dtypes.is_int(dst.dtype) and isinstance(value, float) and not float(value).is_integer():
        raise fail(ERR_INVALID_ARG, f"memset value {value} does not match integer dst `{dst.name}`.",
                   "pass a value of the destination's type.")
    _ew.memset(dst, value, engine)


def iota(dst: NkiTensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0, name: str | None = None) -> None:
    _iota.iota(dst, pattern, offset, channel_multiplier)


def affine_select(dst: NkiTensor, pattern: Any, channel_multiplier: int, on_true_tile: Any, on_false_value: Any,
                  cmp_op: Any = "equal", offset: int = 0, name: str | None = None) -> None:
    _sel.affine_select_pattern(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op, offset)


def range_select(dst: NkiTensor, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_res: Any = None, reduce_op: Any = "maximum",
                 range_start: int = 0, on_false_value: float = float(np.finfo(np.float32).min),
                 name: str | None = None) -> None:
    _sel.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_res, reduce_op, range_start,
                       on_false_value, reduce_cmd=reduce_cmd)


def select_reduce(dst: NkiTensor, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
                  reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = "maximum", reverse_pred: bool = False,
                  name: str | None = None) -> None:
    _sel.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_op, reverse_pred, reduce_cmd=reduce_cmd)


def bn_stats(dst: NkiTensor, data: NkiTensor, name: str | None = None) -> None:
    _red.bn_stats(dst, data)


def bn_aggr(dst: NkiTensor, data: NkiTensor, name: str | None = None) -> None:
    _red.bn_aggr(dst, data)


def reciprocal(dst: NkiTensor, data: NkiTensor, name: str | None = None) -> None:
    _ew.tensor_scalar(dst, data, "reciprocal", 0.0, api="reciprocal")


def exponential(dst: NkiTensor, src: NkiTensor, max_value: Any = 0.0, reduce_res: Any = None,
                reduce_cmd: Any = reduce_cmd.idle, reduce_init: Any = 0.0, name: str | None = None) -> None:
    """exp(src - max_value) with an optional sum (a Vector-engine instruction of NeuronCore-v4)."""
    run = context.current()
    if run.target.generation < 4:
        raise fail(ERR_INVALID_ARG, f"nisa.exponential needs NeuronCore-v4 (trn3); the target is {run.target.name}.",
                   "use nisa.activation(op=nl.exp, bias=-max) or set NEURON_PLATFORM_TARGET_OVERRIDE=trn3.")
    check_on_chip(src, "exponential", "src")
    m = read(max_value).reshape((src.partitions,) + (1,) * (src.ndim - 1)) if isinstance(max_value, NkiTensor) \
        else np.float32(max_value)
    out = np.exp(read(src) - m)
    write(dst, out, None, "exponential")
    if reduce_res is not None:
        init = read(reduce_init).reshape(-1, 1) if isinstance(reduce_init, NkiTensor) else np.float32(reduce_init)
        write(reduce_res, (out.reshape(out.shape[0], -1).sum(axis=1, keepdims=True) + init).reshape(reduce_res.shape),
              None, "exponential")
    run.issue("vector", max(cost.MIN_II, src.free_size), (src,), (dst, reduce_res))


def dropout(dst: NkiTensor, data: NkiTensor, prob: Any, name: str | None = None) -> None:
    _rng.dropout(dst, data, prob)


def rng(dst: NkiTensor, engine: Any = engine.vector, name: str | None = None) -> None:
    _rng.rng_bits(dst, engine="gpsimd" if _mm.engine_name(engine) == "gpsimd" else "vector")


def rand_get_state(dst: NkiTensor, engine: Any = engine.unknown, name: str | None = None) -> None:
    """dst (P, 6) uint32 on GpSimd / (P, 24) on Vector (NC-v4): the engine's per-lane PRNG state (NC-v3+)."""
    _rng.rand_get_state(dst, engine)


def rand_set_state(src_seeds: NkiTensor, engine: Any = engine.unknown, name: str | None = None) -> None:
    """Seed the engine's per-lane PRNG state from src_seeds (P, 6) / (P, 24) uint32 in SBUF (NC-v3+)."""
    _rng.rand_set_state(src_seeds, engine)


def rand2(dst: NkiTensor, min: Any, max: Any, name: str | None = None) -> None:  # noqa: A002
    _rng.rand(dst, float(min), float(max))


def set_rng_seed(src_seeds: Any, name: str | None = None) -> None:
    _rng.rng_state().seed(read(src_seeds).astype(np.int64) if isinstance(src_seeds, NkiTensor) else src_seeds)


def max8(dst: NkiTensor, src: NkiTensor, name: str | None = None) -> None:
    _sel.max8(dst, src)


def nc_find_index8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, name: str | None = None) -> None:
    _sel.nc_find_index8(dst, data, vals)


def nc_match_replace8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, imm: Any, dst_idx: Any = None,
                      name: str | None = None) -> None:
    _sel.nc_match_replace8(dst, data, vals, imm, dst_idx)


def topk(val_dst: NkiTensor, idx_dst: NkiTensor, src: NkiTensor, n: int, name: str | None = None) -> None:
    """The n largest values per partition (descending) and their free-dim indices."""
    x = read(src).reshape(src.partitions, -1)
    order = np.argsort(-x, axis=1, kind="stable")[:, : int(n)]
    write(val_dst, np.take_along_axis(x, order, axis=1).reshape(val_dst.shape), None, "topk")
    write(idx_dst, order.reshape(idx_dst.shape), None, "topk")
    context.current().issue("vector", max(cost.MIN_II, src.free_size * -(-int(n) // 8)), (src,), (val_dst, idx_dst))


def nonzero_with_count(dst: NkiTensor, src: NkiTensor, index_offset: int = 0, padding_val: int = -1,
                       name: str | None = None) -> None:
    """On partitions 0, 16, ..., 112: nonzero indices (+index_offset), padding, then the count (GpSimd, NC-v3+)."""
    _gather.nonzero_with_count(dst, src, index_offset, padding_val)


def sequence_bounds(dst: NkiTensor, segment_ids: NkiTensor, name: str | None = None) -> None:
    """(1, n) segment IDs -> (1, 2, n) [start, end) of each element's segment; ID 0 is padding (n, -1)."""
    _gather.sequence_bounds(dst, segment_ids)


def nc_stream_shuffle(dst: NkiTensor, src: NkiTensor, shuffle_mask: Any, name: str | None = None) -> None:
    _gather.nc_stream_shuffle(dst, src, shuffle_mask)


def dma_copy(dst: NkiTensor, src: NkiTensor, priority: Any = None, oob_mode: Any = oob_mode.error,
             dge_mode: Any = dge_mode.unknown, engine: Any = engine.unknown, name: str | None = None) -> None:
    _dma.dma_copy(dst, src, None, oob_mode)


def dma_compute(dst: NkiTensor, srcs: Any, reduce_op: Any, scales: Any = None, unique_indices: bool = True,
                oob_mode: Any = oob_mode.error, name: str | None = None) -> None:
    _dma.dma_compute(dst, srcs, reduce_op, scales)


def nc_n_gather(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, name: str | None = None) -> None:
    """dst[p, j] = data[p, indices[p, j]]: a per-partition gather along the free dims (GpSimd)."""
    _gather.gather_flattened(dst, data, indices, api="nc_n_gather")


def local_gather(dst: NkiTensor, src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, name: str | None = None) -> None:
    """Per GpSimd core (16 partitions): gather num_elem_per_idx contiguous elements at each uint16 index."""
    _gather.local_gather(dst, src_buffer, index, num_elem_per_idx, num_valid_indices)


def dma_transpose(dst: NkiTensor, src: NkiTensor, axes: Any = None, priority: Any = None,
                  dge_mode: Any = dge_mode.unknown, oob_mode: Any = oob_mode.error, name: str | None = None) -> None:
    if context.current().target.generation < 3:
        raise fail(ERR_INVALID_ARG, "nisa.dma_transpose needs NeuronCore-v3 or later; the target is trn1.",
                   "transpose on the Tensor engine with nisa.nc_transpose.")
    _dma.dma_transpose(dst, src, axes)


def _exchange(api: str) -> Any:
    run = context.current()
    if run.exchange is None:
        raise fail(ERR_INVALID_ARG, f"nisa.{api} needs a multi-core launch.",
                   "launch the kernel as kernel[2] (LNC=2) so there is a peer core.")
    return run


def sendrecv(src: NkiTensor, dst: NkiTensor, send_to_rank: int, recv_from_rank: int, pipe_id: int = 0,
             dma_engine: Any = dma_engine.dma, name: str | None = None) -> None:
    """Send `src` to core `send_to_rank` and receive into `dst` from core `recv_from_rank` (same pipe)."""
    run = _exchange("sendrecv")
    me = run.program_ids[0]
    run.exchange.send(int(pipe_id), me, int(send_to_rank), np.array(src.read()))
    values = run.exchange.receive(int(pipe_id), int(recv_from_rank), me)
    if values.size != dst.size:
        raise fail(ERR_INVALID_ARG, f"sendrecv received {values.size} elements from core {recv_from_rank}, dst "
                   f"`{dst.name}` holds {dst.size}.", "send and receive tiles of the same size on both cores.")
    vals = values.reshape(dst.shape)
    if vals.dtype != dtypes.storage_dtype(dst.dtype):
        vals = dtypes.cast(dtypes.to_compute(vals), dst.dtype)
    dst.write(vals)
    _dma.record_dma(src, dst)


def core_barrier(data: Any = None, cores: Any = (0, 1), engine: Any = engine.gpsimd, name: str | None = None) -> None:
    """Wait until every core in `cores` reaches this barrier."""
    run = _exchange("core_barrier")
    run.exchange.barrier(tuple(sorted(int(c) for c in cores)))
    run.issue("gpsimd", cost.GPSIMD_START_CYCLES, (data,), (data,))


def get_nc_version() -> nc_version:
    return nc_version(context.current().target.generation)


def get_nc_sub_version() -> int:
    return 0


# every operation above issues instructions and returns their handle (AWS's NkiInstruction): `depends_on`
from ...core.ordering import NkiInstruction, returns_instruction  # noqa: E402, F401

for _op in (
    nc_matmul, nc_matmul_mx, quantize_mx, nc_transpose, activation, activation_reduce, tensor_tensor, tensor_scalar,
    scalar_tensor_tensor, tensor_reduce, tensor_partition_reduce, tensor_scalar_reduce, tensor_scalar_cumulative,
    tensor_tensor_scan, tensor_copy, tensor_copy_predicated, memset, iota, affine_select, range_select,
    select_reduce, bn_stats, bn_aggr, reciprocal, exponential, dropout, rng, rand_get_state, rand_set_state, rand2,
    set_rng_seed, max8, nc_find_index8, nc_match_replace8, topk, nonzero_with_count, sequence_bounds,
    nc_stream_shuffle, dma_copy, dma_compute, nc_n_gather, local_gather, dma_transpose, sendrecv, core_barrier,
):
    globals()[_op.__name__] = returns_instruction(_op)
del _op
