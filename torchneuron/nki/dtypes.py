"""NKI data types over NumPy / ml_dtypes, the documented promotion rules, and casts as the engines do them.

Storage is exact (bf16 and fp8 live as ml_dtypes arrays); engines compute in fp32 and round on write.
`tfloat32` (1-8-10) has no NumPy type: it is stored as float32 with the mantissa rounded to 10 bits.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .errors import ERR_DTYPE, fail

float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
tfloat32 = np.dtype("V4")  # legacy spelling (reference §2.7); storage is float32
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)
# NeuronCore-v4 MX data: four fp8 (or fp4) values packed in one element along the contraction dim. Stored as
# their raw bytes; only quantize_mx / nc_matmul_mx and data movement interpret them (instructions.mx)
float8_e4m3fn_x4 = np.dtype([("float8_e4m3fn_x4", np.uint8, (4,))])
float8_e5m2_x4 = np.dtype([("float8_e5m2_x4", np.uint8, (4,))])
float4_e2m1fn_x4 = np.dtype([("float4_e2m1fn_x4", np.uint8, (2,))])
PACKED = (float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4)

FLOATS = (float32, float16, bfloat16, tfloat32, float8_e4m3, float8_e4m3fn, float8_e5m2, float8_e8m0fnu)
INTS = (int8, int16, int32, uint8, uint16, uint32)
SUPPORTED = (*FLOATS, *INTS, bool_, *PACKED)
# dtypes hash, so the per-instruction questions are set lookups, not chains of dtype comparisons
_FLOAT_SET, _INT_SET, _SUPPORTED_SET = frozenset(FLOATS), frozenset(INTS), frozenset(SUPPORTED)

_ALIASES: dict[Any, np.dtype] = {
    "float32": float32, "fp32": float32, "float16": float16, "fp16": float16, "bfloat16": bfloat16,
    "bf16": bfloat16, "tfloat32": tfloat32, "float8_e4m3": float8_e4m3, "float8_e4m3fn": float8_e4m3fn,
    "float8_e5m2": float8_e5m2, "float8_e8m0fnu": float8_e8m0fnu, "bool": bool_, "bool_": bool_,
    "float8_e4m3fn_x4": float8_e4m3fn_x4, "float8_e5m2_x4": float8_e5m2_x4, "float4_e2m1fn_x4": float4_e2m1fn_x4,
}


def as_dtype(dtype: Any) -> np.dtype:
    """Accept NKI dtypes, NumPy dtypes/types, names and torch dtypes; refuse what NeuronCores lack."""
    if dtype is float32 or dtype is bfloat16:  # most allocations: not even a hash
        return dtype
    if isinstance(dtype, np.dtype) and dtype in _SUPPORTED_SET:
        return dtype  # already an NKI dtype (nl.float32, a tile's dtype): asked per allocation
    if dtype is None:
        raise fail(ERR_DTYPE, "a dtype is required here.", "pass e.g. nl.float32 or nl.bfloat16.")
    if isinstance(dtype, str) and dtype in _ALIASES:
        return _ALIASES[dtype]
    if type(dtype).__module__ == "torch":
        name = str(dtype).removeprefix("torch.")
        return as_dtype(name if name in _ALIASES else np.dtype(name))
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise fail(ERR_DTYPE, f"{dtype!r} is not a data type.", "use one of the nl.* dtypes.") from None
    if dt == np.float64 or dt == np.int64 or dt == np.uint64:
        raise fail(ERR_DTYPE, f"{dt} is not supported on NeuronCores (no 64-bit types in NKI).",
                   "use float32 / int32, or cast the host array before calling the kernel.")
    if dt not in _SUPPORTED_SET:
        raise fail(ERR_DTYPE, f"{dt} is not an NKI data type.", "use one of the nl.* dtypes.")
    return dt


def storage_dtype(dt: np.dtype) -> np.dtype:
    if dt is float32:  # nearly every tile: no dtype comparison
        return dt
    return float32 if dt == tfloat32 else dt


def is_float(dt: np.dtype) -> bool:
    return dt in _FLOAT_SET


def is_int(dt: np.dtype) -> bool:
    return dt in _INT_SET or dt == bool_


def itemsize(dt: np.dtype) -> int:
    return 4 if dt == tfloat32 else dt.itemsize


def name(dt: np.dtype) -> str:
    if dt.names:  # a packed MX type
        return dt.names[0]
    return "tfloat32" if dt == tfloat32 else dt.name


def sentinel(dt: np.dtype) -> Any:
    """What uninitialised memory reads as: NaN for floats, 4 for integers (as AWS's simulator)."""
    if is_float(dt):
        return np.nan
    if dt.names:  # packed MX bytes: all ones (NaN in fp8 e4m3fn / e5m2)
        return 0xFF
    return True if dt == bool_ else 4


def cast(values: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Round fp32 engine results into `dt` storage: round-to-nearest-even, integers saturate."""
    values = np.asarray(values)
    if dt is float32 and values.dtype == float32:
        return values
    if dt is tfloat32:
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        lsb = (bits >> 13) & 1
        rounded = ((bits + 0xFFF + lsb) & np.uint32(0xFFFFE000)).astype(np.uint32)
        finite = np.isfinite(values)
        return np.where(finite, rounded.view(np.float32), values.astype(np.float32))
    if is_int(dt) and dt != bool_ and values.dtype.kind == "f":
        info = np.iinfo(dt)
        with np.errstate(invalid="ignore"):
            rounded = np.rint(values.astype(np.float64, copy=False))
            rounded = np.nan_to_num(rounded, nan=0.0)
            return np.clip(rounded, info.min, info.max).astype(dt)
    if is_int(dt) and dt != bool_ and values.dtype.kind in "iub":
        info = np.iinfo(dt)
        wide = values.astype(np.int64, copy=False)
        return np.clip(wide, info.min, info.max).astype(dt)
    if dt == bool_:
        return values.astype(np.bool_)
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(dt)


def to_compute(values: np.ndarray) -> np.ndarray:
    """Engines compute arithmetic in fp32 whatever the storage type."""
    if values.dtype == np.float32:
        return values
    return values.astype(np.float32)


# --- promotion (reference §2.7, legacy promotion doc) ---

_FLOAT_RANK = {float8_e4m3: 0, float8_e4m3fn: 0, float8_e5m2: 0, float8_e8m0fnu: 0,
               bfloat16: 1, float16: 1, tfloat32: 2, float32: 2}


def _promote_floats(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    ra, rb = _FLOAT_RANK[a], _FLOAT_RANK[b]
    if ra == rb == 0:
        return bfloat16          # fp8e4 + fp8e5 -> bf16
    if ra == rb == 1:
        return float32           # fp16 + bf16 -> fp32
    if ra == rb == 2:
        return float32
    return a if ra > rb else b   # the wider one (fp8 + fp16 -> fp16)


def _promote_ints(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == bool_:
        return b if b != bool_ else uint8
    if b == bool_:
        return a
    if {a, b} == {int32, uint32}:
        return float32
    return np.promote_types(a, b)


def scalar_dtype(value: Any) -> np.dtype:
    """Python scalars are not weak in NKI: bool -> uint8, int -> int32, float -> float32."""
    if isinstance(value, (bool, np.bool_)):
        return uint8
    if isinstance(value, (int, np.integer)):
        return int32
    return float32


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    if is_float(a) and is_float(b):
        return _promote_floats(a, b)
    if is_float(a):
        return a
    if is_float(b):
        return b
    return _promote_ints(a, b)


def result_dtype(*dtypes: np.dtype) -> np.dtype:
    out = dtypes[0]
    for dt in dtypes[1:]:
        out = promote(out, dt)
    return out


class finfo:
    """`nl.finfo(dtype)`: the limits of a float type (NumPy's finfo does not know the ml_dtypes names)."""

    def __init__(self, dtype: Any) -> None:
        dt = storage_dtype(as_dtype(dtype))
        info = ml_dtypes.finfo(dt)
        self.dtype = dt
        self.bits = info.bits
        self.max = float(info.max)
        self.min = float(info.min)
        self.eps = float(info.eps)
        self.tiny = float(info.tiny)
