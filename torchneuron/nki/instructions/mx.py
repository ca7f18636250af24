"""NeuronCore-v4 microscaling (OCP MX): `quantize_mx` and `nc_matmul_mx`, as AWS documents them.

Data. A packed element (`float8_e4m3fn_x4` / `float8_e5m2_x4`) holds four fp8 values that were four
contiguous free-dim elements of the bf16/fp16 source, so a [P, 4F] source quantizes to [P, F]. In a matmul
the contraction runs over the partitions *and* the four values of each element.

Scales. One uint8 (e8m0: 2^(s - 127)) scale per group of 32 values = 8 partitions x the 4 values of one
packed element. Within each 32-partition SBUF quadrant the 4 groups' scales sit on 4 consecutive partitions
of the scale tile (partition q * 32 + g, relative to the scale tile; a source of only 32 partitions has a
4-partition scale tile), one scale per packed element of the partition.

Quantizing picks the group's shared exponent as OCP's `floor(log2(amax)) - emax(element)` plus one (AWS:
"a block scale that is two times larger", keeping headroom for rounding), then rounds value / scale to the
element type (nearest even). fp4 (`float4_e2m1fn_x4`) operands are refused: the nibble order of the
packing is not documented, and a guess would be a silent wrong result.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .. import cost, dtypes
from ..core import context
from ..core.buffers import PSUM, SBUF
from ..core.tensor import NkiTensor
from ..errors import ERR_DTYPE, ERR_MEMORY, ERR_SHAPE, fail
from . import matmul_group
from .common import check_buffer, need_generation, read

_ELEMENT = {dtypes.float8_e4m3fn_x4: (np.dtype(ml_dtypes.float8_e4m3fn), 8),
            dtypes.float8_e5m2_x4: (np.dtype(ml_dtypes.float8_e5m2), 15)}  # element type, its max exponent


def _element(api: str, arg: str, t: NkiTensor) -> tuple[np.dtype, int]:
    found = _ELEMENT.get(t.dtype)
    if found is None:
        hint = ("fp4 (float4_e2m1fn_x4) operands are not simulated yet" if t.dtype == dtypes.float4_e2m1fn_x4
                else "use nl.float8_e4m3fn_x4 or nl.float8_e5m2_x4")
        raise fail(ERR_DTYPE, f"'{api}' operand '{arg}' is {dtypes.name(t.dtype)}; it must be a 4-packed fp8 type.",
                   hint + ".")
    return found


def _scale_rows(partitions: int) -> np.ndarray:
    """For each data partition, the scale tile partition holding its group's scales."""
    p = np.arange(partitions)
    return (p // 32) * 32 + (p % 32) // 8 if partitions > 32 else (p % 32) // 8


def _check_layout(api: str, data: NkiTensor, scale: NkiTensor, data_arg: str, scale_arg: str) -> None:
    for t, arg in ((data, data_arg), (scale, scale_arg)):
        check_buffer(t, api, arg, (SBUF,))
    p = data.partitions
    if p % 32 or p > 128:
        raise fail(ERR_SHAPE, f"'{api}': '{data_arg}' spans {p} partitions; MX groups need a multiple of 32, "
                   "at most 128.", "tile the partition dim in 32, 64, 96 or 128 partitions.")
    # a one-quadrant source's scales use 4 partitions (its scale tile may be declared with the whole quadrant)
    allowed = (4, 32) if p == 32 else (p,)
    if scale.partitions not in allowed or scale.free_size != data.free_size:
        raise fail(ERR_SHAPE, f"'{api}': '{scale_arg}' is {scale.shape}; for '{data_arg}' {data.shape} it must be "
                   f"({allowed[0]}, {data.free_size}) (one scale per 8 partitions x 4 values, 4 partitions per "
                   "quadrant).", "allocate the scale tile as nisa.quantize_mx documents.")
    if scale.dtype not in (dtypes.uint8, dtypes.float8_e8m0fnu):
        raise fail(ERR_DTYPE, f"'{api}': '{scale_arg}' is {dtypes.name(scale.dtype)}; scales are uint8 "
                   "(or float8_e8m0fnu).", "give the scale tile dtype nl.uint8.")


def _scale_bits(scale: NkiTensor) -> np.ndarray:
    raw = np.ascontiguousarray(scale.read())
    return raw.view(np.uint8).reshape(scale.partitions, -1).astype(np.int32)


def unpack(data: NkiTensor, scale: NkiTensor) -> np.ndarray:
    """[P, F] packed + scales -> [P, F, 4] fp32 dequantized values."""
    element, _ = _element("nc_matmul_mx", "data", data)
    raw = np.ascontiguousarray(data.read()).view(np.uint8).reshape(data.partitions, -1, 4)
    values = raw.view(element).astype(np.float32)
    exps = _scale_bits(scale)[_scale_rows(data.partitions)] - 127  # [P, F]
    return values * np.exp2(exps.astype(np.float32))[:, :, None]


def quantize_mx(dst: NkiTensor, src: NkiTensor, dst_scale: NkiTensor, api: str = "quantize_mx") -> None:
    need_generation(api, 4)
    check_buffer(src, api, "src", (SBUF,))
    if src.dtype not in (dtypes.bfloat16, dtypes.float16):
        raise fail(ERR_DTYPE, f"'{api}' quantizes bf16/fp16; 'src' is {dtypes.name(src.dtype)}.", "cast src first.")
    element, emax = _element(api, "dst", dst)
    p, f = src.partitions, src.free_size
    if f % 4 or dst.partitions != p or dst.free_size * 4 != f:
        raise fail(ERR_SHAPE, f"'{api}': src {src.shape} needs a dst of ({p}, {f // 4}) packed elements, got "
                   f"{dst.shape}.", "give dst a quarter of src's free size (4 values per packed element).")
    _check_layout(api, dst, dst_scale, "dst", "dst_scale")
    x = read(src).reshape(p, f // 4, 4)
    groups = x.reshape(p // 8, 8, f // 4, 4)
    amax = np.abs(groups).max(axis=(1, 3))  # [P/8, F/4]
    with np.errstate(divide="ignore"):
        shared = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - emax + 1, -127)
    shared = np.clip(shared, -127, 127).astype(np.int32)
    scaled = groups / np.exp2(shared.astype(np.float32))[:, None, :, None]
    q = scaled.reshape(p, f // 4, 4).astype(element)  # round to nearest even
    packed = np.ascontiguousarray(q).view(np.uint8).reshape(p, f // 4, 4)
    dst.write(packed.reshape(-1).view(dtypes.storage_dtype(dst.dtype)).reshape(dst.shape))
    rows = dst_scale.read().copy()
    bits = np.ascontiguousarray(rows).view(np.uint8).reshape(dst_scale.partitions, -1)
    bits[_scale_rows(p)[::8]] = (shared + 127).astype(np.uint8)
    dst_scale.write(bits.reshape(-1).view(dtypes.storage_dtype(dst_scale.dtype)).reshape(dst_scale.shape))
    context.current().issue("vector", max(cost.MIN_II, f), (src,), (dst, dst_scale), cost.SBUF_ACCESS_CYCLES)


def nc_matmul_mx(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, stationary_scale: NkiTensor,
                 moving_scale: NkiTensor, accumulate: Any = None, api: str = "nc_matmul_mx") -> None:
    """dst[M, N] = sum over partitions p and packed lanes j of deq(stationary)[p, M, j] * deq(moving)[p, N, j]."""
    need_generation(api, 4)
    _check_layout(api, stationary, stationary_scale, "stationary", "stationary_scale")
    _check_layout(api, moving, moving_scale, "moving", "moving_scale")
    if dst.buffer != PSUM:
        raise fail(ERR_MEMORY, f"'{api}' writes PSUM; dst `{dst.name}` is in '{dst.buffer.name}'.",
                   "allocate dst with buffer=nl.psum.")
    if stationary.partitions != moving.partitions:
        raise fail(ERR_SHAPE, f"'{api}': stationary and moving contract over {stationary.partitions} and "
                   f"{moving.partitions} partitions.", "give both the same partition count.")
    m, n = stationary.free_size, moving.free_size
    n_max = 1024 if dst.dtype == dtypes.bfloat16 else 512
    if m > 128 or m % 2 or n > n_max or dst.partitions != m or dst.free_size != n:
        raise fail(ERR_SHAPE, f"'{api}': stationary free size {m} (even, <= 128), moving free size {n} (<= {n_max}) "
                   f"and dst {dst.shape} (must be ({m}, {n})).", "tile the matmul within the documented sizes.")
    a = unpack(stationary, stationary_scale)  # [P, M, 4]
    b = unpack(moving, moving_scale)          # [P, N, 4]
    result = np.einsum("pmj,pnj->mn", a, b, optimize=True).astype(np.float32)
    matmul_group.accumulate_into(dst, matmul_group.shape_result(dst, result), accumulate)
    k = stationary.partitions * 4
    context.current().issue("tensor", cost.matmul_cycles(m, n, False), (stationary, moving, stationary_scale,
                            moving_scale), (dst,), cost.MM_INIT_LATENCY, flops=2.0 * k * m * n)
