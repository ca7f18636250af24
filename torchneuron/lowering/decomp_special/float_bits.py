"""Bit-exact float ops: frexp and nextafter."""

from __future__ import annotations

from collections.abc import Callable

import torch


# ------------------------------------------------------------------------------------- floating-point bits
# XLA:CPU flushes subnormal floats to zero in arithmetic and comparisons, so frexp and nextafter, whose results
# are exact bit-level facts about subnormals too, work on the integer bit patterns (and exact int -> float
# conversions) only.
_SIGN_BIT = -(1 << 31)        # 0x80000000 as int32
_MAG_MASK = (1 << 31) - 1     # 0x7FFFFFFF


def _bits_op(fn: Callable) -> Callable:
    """A bitwise op whose second operand may be a Python int (torch-mlir lowers only the Tensor-Tensor forms)."""
    return lambda a, b: fn(a, b if isinstance(b, torch.Tensor) else torch.full_like(a, b))


_and, _or = _bits_op(torch.bitwise_and), _bits_op(torch.bitwise_or)
_shl, _shr = _bits_op(torch.bitwise_left_shift), _bits_op(torch.bitwise_right_shift)


def _f32_bits(x):
    """The float32 bit pattern of x as int32 (bfloat16 widened exactly on its bits: it is float32's top half)."""
    if x.dtype == torch.bfloat16:
        return _shl(x.view(torch.int16).to(torch.int32), 16)
    if x.dtype != torch.float32:
        x = x.to(torch.float32)
    return x.view(torch.int32)


def _from_f32_bits(bits, dtype: torch.dtype):
    """Inverse of ``_f32_bits`` for a pattern representable in ``dtype`` (for bfloat16: low half zero)."""
    if dtype == torch.bfloat16:
        return _shr(bits, 16).to(torch.int16).view(torch.bfloat16)
    f = bits.view(torch.float32)
    return f if dtype == torch.float32 else f.to(dtype)


def _frexp(x):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1, read off the float32 bit
    pattern; a subnormal's fraction field is first converted exactly to a (normal) float, which normalises it.
    0, inf and nan give (x, 0) like PyTorch."""
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return NotImplemented
    bits = _f32_bits(x)
    mag = _and(bits, _MAG_MASK)
    frac = _and(bits, 0x7FFFFF)
    biased = _shr(mag, 23)
    sub = biased == 0
    # a subnormal is frac * 2**-149, and frac as a float is normal: take its exponent and fraction instead
    src = torch.where(sub, frac.to(torch.float32).view(torch.int32), mag)
    exp = _shr(src, 23) - 126 - sub.to(torch.int32) * 149
    mbits = _or(_and(bits, _SIGN_BIT),
                             _or(_and(src, 0x7FFFFF), 126 << 23))
    special = (mag == 0) | (biased == 0xFF)
    mant = torch.where(special, x, _from_f32_bits(mbits, x.dtype))
    return mant, torch.where(special, 0, exp).to(torch.int32)


def _order_key(bits):
    """A monotonic integer image of a float32 bit pattern (sign-magnitude to two's complement; +-0 -> 0)."""
    return torch.where(bits < 0, -_and(bits, _MAG_MASK), bits)


def _nextafter(x, y):
    """Next representable value after x towards y: one step of the order key (one unit in the last place; for
    bfloat16 2**16 on its float32 pattern), so +-0 steps to the smallest subnormal with y's sign and the
    largest finite value to inf; y if x == y, nan if either is nan."""
    dt = torch.result_type(x, y)
    if dt not in (torch.float32, torch.bfloat16):
        return NotImplemented
    x, y = torch.broadcast_tensors(x.to(dt), y.to(dt))
    unit = 1 if dt == torch.float32 else 1 << 16
    bx, by = _f32_bits(x), _f32_bits(y)
    kx, ky = _order_key(bx), _order_key(by)
    k = kx + torch.where(ky > kx, unit, -unit).to(torch.int32)
    out = torch.where(k < 0, _or(-k, _SIGN_BIT), k)
    out = torch.where(k == 0, _and(bx, _SIGN_BIT), out)  # stepping onto zero keeps x's sign (-denorm -> -0)
    out = torch.where(kx == ky, by, out)
    out = torch.where(torch.isnan(x) | torch.isnan(y), 0x7FC00000, out).to(torch.int32)
    return _from_f32_bits(out, dt)


def _binary_float(fn: Callable) -> Callable:
    def decomp(a, b):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            return NotImplemented
        return fn(a, b)
    return decomp
