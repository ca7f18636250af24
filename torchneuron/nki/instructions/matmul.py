"""Tensor engine: nc_matmul (PSUM accumulation), transposes, and `nl.matmul`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import context
from ..core.buffers import PSUM, SBUF
from ..core.tensor import NkiTensor
from ..enums import matmul_perf_mode
from ..errors import (
    ERR_DIM_LIMIT,
    ERR_DTYPE,
    ERR_PARTITION_MISMATCH,
    ERR_PARTITIONS,
    ERR_SHAPE,
    fail,
)
from . import matmul_group
from .common import (
    allocate,
    check_buffer,
    check_partitions,
    input_mask,
    mark_result,
    mask_for,
    memo_engine_name,
    output_mask,
    read,
    write,
)
from .elementwise import tensor_copy

_FP32_FAMILY = (dtypes.float32, dtypes.tfloat32)
_PERF_NONE = matmul_perf_mode.none  # the default perf_mode: no double_row (checked per matmul)


def _as_2d(t: NkiTensor, values: np.ndarray) -> np.ndarray:
    return values.reshape(t.partitions, -1) if t.pdim == 0 else np.moveaxis(values, t.pdim, 0).reshape(t.partitions, -1)


def check_matmul(api: str, dst: NkiTensor | None, stationary: NkiTensor, moving: NkiTensor,
                 is_transpose: bool) -> tuple[int, int, int]:
    run = context.current()
    if not run.accounting:  # a repeat of a checked signature: the same operands passed every check below
        return stationary.partitions, stationary.free_size, moving.free_size
    t = run.target
    check_buffer(stationary, api, "stationary", (SBUF,))
    check_buffer(moving, api, "moving", (SBUF,))
    if dst is not None:
        check_buffer(dst, api, "dst", (PSUM,))
    check_partitions(stationary, api, "stationary")
    check_partitions(moving, api, "moving")
    k, m, n = stationary.partitions, stationary.free_size, moving.free_size
    if moving.partitions != k:
        raise fail(ERR_PARTITION_MISMATCH, f"'{api}' contracts over partitions: stationary has {k}, moving has "
                   f"{moving.partitions}.", "give both operands the same contraction (partition) size.")
    if m > t.gemm_stationary_fmax:
        raise fail(ERR_DIM_LIMIT, f"'{api}' stationary free size {m} exceeds the Tensor engine limit of "
                   f"{t.gemm_stationary_fmax}.",
                   f"tile the stationary operand's free dim in {t.gemm_stationary_fmax}s.")
    if n > t.gemm_moving_fmax:
        raise fail(ERR_DIM_LIMIT, f"'{api}' moving free size {n} exceeds the Tensor engine limit of "
                   f"{t.gemm_moving_fmax} (one PSUM bank of fp32).",
                   f"tile the moving operand's free dim in {t.gemm_moving_fmax}s.")
    fp32_in = [x.dtype in _FP32_FAMILY for x in (stationary, moving)]
    if any(fp32_in) and not all(fp32_in) and not is_transpose:
        raise fail(ERR_DTYPE, f"'{api}' mixes an fp32 operand with {dtypes.name(stationary.dtype)}/"
                   f"{dtypes.name(moving.dtype)}; fp32 matmul needs both operands fp32 (or tf32).",
                   "cast the other operand to float32, or both to bfloat16.")
    if dst is not None:
        if dst.partitions != m or dst.free_size != n:
            raise fail(ERR_SHAPE, f"'{api}' result is [{m}, {n}] but dst `{dst.name}` has shape {dst.shape}.",
                       "allocate the PSUM tile as [stationary free size, moving free size].")
        if dst.free_size * dtypes.itemsize(dst.dtype) > t.psum_bank_bytes:
            raise fail(ERR_DIM_LIMIT, f"'{api}' dst `{dst.name}` needs {dst.free_size * dtypes.itemsize(dst.dtype)} "
                       f"bytes per partition; a matmul writes one PSUM bank ({t.psum_bank_bytes} bytes).",
                       "split the moving operand so each result fits one bank.")
        _check_bank(api, dst, t.psum_bank_bytes)
        if dst.dtype not in _FP32_FAMILY and not is_transpose:
            raise fail(ERR_DTYPE, f"'{api}' accumulates in fp32 but dst `{dst.name}` is {dtypes.name(dst.dtype)}.",
                       "allocate the PSUM result as nl.float32.")
    return k, m, n


def _check_bank(api: str, dst: NkiTensor, bank_bytes: int) -> None:
    """A matmul writes within one PSUM bank (2 KiB per partition); a result straddling two banks is illegal."""
    if dst.index is not None:
        return
    st = dst.storage
    free_start = (dst.offset % st.partition_stride) * dtypes.itemsize(dst.dtype) if st.partition_stride else 0
    free_end = free_start + dst.free_size * dtypes.itemsize(dst.dtype) - 1
    if free_start // bank_bytes != free_end // bank_bytes:
        raise fail(ERR_DIM_LIMIT, f"'{api}' writes bytes [{free_start}, {free_end}] of each partition of `{dst.name}`, "
                   f"across a PSUM bank boundary (banks are {bank_bytes} bytes).",
                   "start each matmul result at a bank boundary (a multiple of 512 fp32 elements).")


def check_transpose(api: str, data: NkiTensor, engine: str) -> None:
    run = context.current()
    if not run.accounting:
        return  # a repeat of a checked signature: the same operand passed then
    check_partitions(data, api, "data")
    p, f = data.partitions, data.free_size
    limit = 32 if engine == "vector" else run.target.pmax
    if p > limit or f > limit:
        code = ERR_PARTITIONS if p > limit else ERR_DIM_LIMIT
        raise fail(code, f"'{api}' on the {engine} engine transposes at most {limit}x{limit}, got {p}x{f}.",
                   "transpose in blocks of " + ("32x32 on the Vector engine." if engine == "vector" else "128x128."))


def engine_name(engine: Any) -> str:
    return memo_engine_name(("matmul", type(engine), engine), lambda: _resolve_engine(engine))


def _resolve_engine(engine: Any) -> str:
    eng = str(getattr(engine, "name", engine) or "tensor").removesuffix("_engine")
    return "tensor" if eng in ("unknown", "0", "None") else eng


_FP8 = (dtypes.float8_e4m3, dtypes.float8_e4m3fn, dtypes.float8_e5m2)


def _double_row(api: str, dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor) -> tuple[np.ndarray, np.ndarray]:
    """perf_mode=double_row (NC-v3+, fp8): operands [K, 2, M] / [K, 2, N] contract over both rows, 2K deep,
    in the time of one pass. Returns the operands as [2K, M] / [2K, N]."""
    run = context.current()
    if run.target.generation < 3:
        raise fail(ERR_DTYPE, f"'{api}' perf_mode=double_row needs NeuronCore-v3 or later; the target is "
                   f"{run.target.name}.",
                   "drop perf_mode or target trn2/trn3.")
    for t, arg in ((stationary, "stationary"), (moving, "moving")):
        if t.dtype not in _FP8:
            raise fail(ERR_DTYPE, f"'{api}' double_row takes fp8 operands; '{arg}' is {dtypes.name(t.dtype)}.",
                       "cast both operands to an fp8 type, or drop perf_mode.")
        if t.ndim != 3 or t.shape[1] != 2:
            raise fail(ERR_SHAPE, f"'{api}' double_row '{arg}' must be [K, 2, free], got {t.shape}.",
                       "lay the two contraction rows out as the middle dimension.")
    halves = []
    for t in (stationary, moving):
        v = read(t)
        halves.append(np.concatenate([v[:, 0, :], v[:, 1, :]], axis=0))
    return halves[0], halves[1]


def _check_tiling(api: str, k: int, m: int, tile_position: Any, tile_size: Any) -> float:
    """Row/column tiling of the 128x128 PE array: the matmul uses a rows x cols quarter (or smaller) at
    tile_position, so up to 4 (16) independent small matmuls share the array. Returns the array fraction."""
    if not tile_size and not tile_position:
        return 1.0
    run = context.current()
    rows, cols = (int(v) for v in tile_size) if tile_size else (128, 128)
    r0, c0 = (int(v) for v in tile_position) if tile_position else (0, 0)
    allowed = (32, 64, 128) if run.target.generation >= 3 else (64, 128)
    if rows not in allowed or cols not in allowed:
        raise fail(ERR_DIM_LIMIT, f"'{api}' tile_size {(rows, cols)} is not supported on {run.target.name}.",
                   f"use sizes from {allowed}.")
    if r0 % rows or c0 % cols or r0 + rows > 128 or c0 + cols > 128:
        raise fail(ERR_DIM_LIMIT, f"'{api}' tile_position {(r0, c0)} does not place a {rows}x{cols} tile inside the "
                   "128x128 PE array.", "use positions that are multiples of the tile size.")
    if k > rows or m > cols:
        raise fail(ERR_DIM_LIMIT, f"'{api}' contracts {k} rows into {m} columns, more than its {rows}x{cols} tile.",
                   "use a larger tile_size or split the matmul.")
    return rows * cols / (128 * 128)


def nc_matmul(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, accumulate: bool | None = None,
              is_transpose: bool = False, mask: np.ndarray | None = None, api: str = "nc_matmul",
              perf_mode: Any = None, tile_position: Any = (), tile_size: Any = ()) -> None:
    """dst[M, N] (PSUM) = stationary[K, M].T @ moving[K, N]; first write of a PSUM group overwrites."""
    run = context.current()
    double_row = perf_mode is not None and perf_mode is not _PERF_NONE \
        and str(getattr(perf_mode, "name", perf_mode)) == "double_row"
    if double_row:
        a, b = _double_row(api, dst, stationary, moving)
        check_matmul(api, dst, stationary[:, 0, :], moving[:, 0, :], is_transpose)
        k, m, n = a.shape[0], a.shape[1], b.shape[1]
    else:
        k, m, n = check_matmul(api, dst, stationary, moving, is_transpose)
        a = _as_2d(stationary, read(stationary, mask_for(mask, stationary.shape)))
        b = _as_2d(moving, read(moving, mask_for(mask, moving.shape)))
    fraction = _check_tiling(api, stationary.partitions, m, tile_position, tile_size)
    transposing = is_transpose and dst.dtype not in _FP32_FAMILY  # a PE transpose passes values through
    st = dst.storage
    group = st.pending
    deferrable = mask is None and dst.index is None and not transposing
    if group is not None and (not deferrable or accumulate is False or group.key != dst.key()):
        st.flush()
        group = None
    if deferrable:
        if group is None:
            group = matmul_group.PendingMatmul(dst.key(), accumulate)
        # fp32 operands may still be views of SBUF: snapshot them, the kernel may overwrite the tiles
        group.stationary.append(a.copy() if np.may_share_memory(a, stationary.storage.data) else a)
        group.moving.append(b.copy() if np.may_share_memory(b, moving.storage.data) else b)
        st.pending = group
    else:
        result = matmul_group.shape_result(dst, matmul_group.product(a, b))
        if transposing:
            write(dst, result, mask, api)
        else:
            matmul_group.accumulate_into(dst, result, accumulate, mask_for(mask, dst.shape))
    fp32 = stationary.dtype in _FP32_FAMILY and moving.dtype in _FP32_FAMILY
    run.issue("tensor", cost.matmul_cycles(m, n, fp32) * fraction, (stationary, moving), (dst,), cost.MM_INIT_LATENCY,
              flops=2.0 * k * m * n)


def nc_transpose(dst: NkiTensor, data: NkiTensor, engine: Any = None, mask: np.ndarray | None = None,
                 api: str = "nc_transpose") -> None:
    run = context.current()
    eng = engine_name(engine)
    p, f = data.partitions, data.free_size
    if run.accounting:  # a repeat of a checked signature passed these checks
        check_transpose(api, data, eng)
        if eng == "tensor":
            check_buffer(data, api, "data", (SBUF,))
            check_buffer(dst, api, "dst", (PSUM,))
        if dst.partitions != f or dst.free_size != p:
            raise fail(ERR_SHAPE, f"'{api}' of a [{p}, {f}] tile needs a [{f}, {p}] dst, got {dst.shape}.",
                       "swap the partition and free sizes for dst.")
    values = _as_2d(data, data.read(mask_for(mask, data.shape)))
    out_mask = None
    if mask is not None:  # a mask over the input tile: the transposed elements it selects are written
        out_mask = _as_2d(data, input_mask(api, mask, data.shape)).T.reshape(dst.shape)
    dst.write(dtypes.cast(values.T.reshape(dst.shape), dst.dtype) if values.dtype != dtypes.storage_dtype(dst.dtype)
              else values.T.reshape(dst.shape), out_mask)
    if eng == "tensor":
        run.issue("tensor", cost.pe_transpose_cycles(p, f), (data,), (dst,), cost.MM_INIT_LATENCY)
    else:
        run.issue("vector", cost.vector_cycles(run.target, f), (data,), (dst,))


def nl_matmul(x: NkiTensor, y: NkiTensor, transpose_x: bool = False, mask: np.ndarray | None = None) -> NkiTensor:
    """`nl.matmul`: x @ y (or x.T @ y), result fp32 in PSUM; without transpose_x, x is first moved to
    [K, M] on the Tensor engine, as the compiler lowers it."""
    if not transpose_x:
        check_buffer(x, "matmul", "x", (SBUF, PSUM))
        xt = allocate((x.free_size, x.partitions), x.dtype, PSUM)
        nc_transpose(xt, x, api="matmul")
        stationary = allocate(xt.shape, x.dtype, SBUF)
        tensor_copy(stationary, xt, api="matmul")  # PSUM -> SBUF on the Vector engine, as the compiler emits it
    else:
        stationary = x
    dst = allocate((stationary.free_size, y.free_size), dtypes.float32, PSUM)
    nc_matmul(dst, stationary, y, accumulate=False, mask=None, api="matmul")
    if mask is not None:  # a mask over the [M, N] result: the elements the instruction writes
        mark_result(dst, output_mask("matmul", mask, dst.shape))
    return dst


def nl_transpose(x: NkiTensor, dtype: Any = None, buffer: Any = SBUF, mask: np.ndarray | None = None) -> NkiTensor:
    dt = dtypes.as_dtype(dtype) if dtype is not None else x.dtype
    if x.buffer == SBUF:
        out = allocate((x.free_size, x.partitions), x.dtype, PSUM)
        nc_transpose(out, x, mask=mask, api="transpose")
    else:
        out = allocate((x.free_size, x.partitions), x.dtype, SBUF if x.buffer == PSUM else PSUM)
        nc_transpose(out, x, engine="vector", mask=mask, api="transpose")
    if out.buffer == buffer and dt == out.dtype:
        return out
    final = allocate(out.shape, dt, buffer)
    write(final, read(out), None, "transpose")
    run = context.current()
    run.issue("vector", cost.vector_cycles(run.target, final.free_size, kind="copy"), (out,), (final,))
    return final
