"""Complex ``mul``/``add``/``sub``/``div`` as real arithmetic on the parts."""

from __future__ import annotations

import torch

from .complex_parts import _complex, _view_as_real

aten = torch.ops.aten


def _parts(v, dtype: torch.dtype) -> tuple:
    """(re, im) of an operand in the real dtype ``dtype``: tensors or Python numbers; im is None when the
    operand is real (so real operands cost nothing extra)."""
    if isinstance(v, torch.Tensor):
        if v.is_complex():
            p = _view_as_real(v)
            re, im = aten.select.int(p, -1, 0), aten.select.int(p, -1, 1)
            cast = (lambda t: aten._to_copy.default(t, dtype=dtype)) if p.dtype != dtype else (lambda t: t)
            return cast(re), cast(im)
        return (aten._to_copy.default(v, dtype=dtype) if v.dtype != dtype else v), None
    if isinstance(v, complex):
        return v.real, v.imag
    return v, None


def _complex_result(a, b) -> torch.dtype | None:
    """The result dtype if this binary op involves a complex operand, else None (the op lowers as is)."""
    if not any(isinstance(v, torch.Tensor) and v.is_complex() or isinstance(v, complex) for v in (a, b)):
        return None
    return torch.result_type(a, b)


def _as_tensor(v, like: torch.Tensor):
    return v if isinstance(v, torch.Tensor) else aten.full_like.default(like, v)


def _assemble(re, im, dtype: torch.dtype) -> torch.Tensor:
    ref = re if isinstance(re, torch.Tensor) else im
    return _complex(_as_tensor(re, ref), _as_tensor(im, ref))


def _cmul_parts(a, b, c, d):
    """(a + bi)(c + di) with None for a zero imaginary part."""
    if b is None and d is None:
        return a * c, None
    if d is None:
        return a * c, b * c
    if b is None:
        return a * c, a * d
    return a * c - b * d, a * d + b * c


def _complex_operands(self, other) -> tuple | None:
    """(result dtype, (a, b), (c, d)): both operands' real and imaginary parts in the result's real dtype, or
    None when neither operand is complex (the op then lowers as is)."""
    dtype = _complex_result(self, other)
    if dtype is None:
        return None
    real = dtype.to_real()
    return dtype, _parts(self, real), _parts(other, real)


def _complex_mul(self, other):
    """Complex products as real arithmetic on the parts (complex elementwise ops do not lower)."""
    operands = _complex_operands(self, other)
    if operands is None:
        return NotImplemented
    dtype, ab, cd = operands
    re, im = _cmul_parts(*ab, *cd)
    return _assemble(re, 0.0 if im is None else im, dtype)


def _complex_add(self, other, *, alpha=1, negate=False):
    operands = _complex_operands(self, other)
    if operands is None:
        return NotImplemented
    dtype, (a, b), (c, d) = operands
    if alpha != 1:
        c, d = _cmul_parts(c, d, *((alpha.real, alpha.imag) if isinstance(alpha, complex) else (alpha, None)))
    sign = -1 if negate else 1
    re = a + sign * c
    im = (b if b is not None else 0.0) + (sign * d if d is not None else 0.0)
    return _assemble(re, im, dtype)


def _complex_sub(self, other, *, alpha=1):
    return _complex_add(self, other, alpha=alpha, negate=True)


def _complex_div(self, other):
    """(a + bi) / (c + di) with Smith's scaling (divide by the larger of |c|, |d|), so |c|² + |d|² never
    overflows or underflows; a real divisor divides each part."""
    operands = _complex_operands(self, other)
    if operands is None:
        return NotImplemented
    dtype, (a, b), (c, d) = operands
    b = 0.0 if b is None else b
    if d is None:
        return _assemble(a / c, b / c, dtype)
    if not isinstance(c, torch.Tensor):  # a Python complex divisor: multiply by its reciprocal
        inv = 1 / complex(c, d)
        re, im = _cmul_parts(a, b, inv.real, inv.imag)
        return _assemble(re, im, dtype)
    c_larger = aten.ge.Tensor(aten.abs.default(c), aten.abs.default(d))
    r = aten.where.self(c_larger, d / c, c / d)        # the smaller over the larger
    den = aten.where.self(c_larger, c + d * r, c * r + d)
    re = aten.where.self(c_larger, a + b * r, a * r + b) / den
    im = aten.where.self(c_larger, b - a * r, b * r - a) / den
    return _assemble(re, im, dtype)


def _prims_binary(op):
    """prims.<op> → aten.<op>.Tensor, which decompositions.py installs only for ops without a table entry."""
    return lambda a, b: op(a, b)
