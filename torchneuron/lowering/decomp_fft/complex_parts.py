"""Building complex values from real parts and taking them apart, with the few complex ops that lower."""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _real_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype.to_real() if dtype.is_complex else dtype


def _as_complex(x: torch.Tensor) -> torch.Tensor:
    """x + 0i (exact for finite x): ``polar(x, 0)``, since casting real → complex does not lower."""
    return aten.polar.default(x, aten.zeros_like.default(x))


def _imag_unit(dtype: torch.dtype, device) -> torch.Tensor:
    """Exactly ``i`` (shape [1]), from ops that lower. ``polar(½, ±t)`` with t = fl(π/2) is (½c, ±½) with
    c = cos t ≈ -4.4e-8 (sin t rounds to exactly 1); their difference (a complex dot with [1, -1]) is (0, 1)
    exactly, because cos is even and sin is odd."""
    half = aten.full.default([1, 2], 0.5, dtype=dtype, device=device)
    t = aten.full.default([1, 1], math.pi / 2, dtype=dtype, device=device)
    pair = aten.polar.default(half, aten.cat.default([t, aten.neg.default(t)], 1))
    signs = aten.cat.default([aten.full.default([1, 1], 1.0, dtype=dtype, device=device),
                              aten.full.default([1, 1], -1.0, dtype=dtype, device=device)], 0)
    return aten.reshape.default(aten.mm.default(pair, _as_complex(signs)), [1])


def _complex(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    """re + i·im as one complex dot per element: [re, im] · [1, i] (each product is exact for finite parts)."""
    shape = list(torch.broadcast_shapes(re.shape, im.shape))
    re, im = (aten.expand.default(t, shape) if list(t.shape) != shape else t for t in (re, im))
    parts = aten.stack.default([aten.reshape.default(re, [-1]), aten.reshape.default(im, [-1])], 1)
    one = aten.full.default([1], 1.0, dtype=re.dtype, device=re.device)
    basis = aten.cat.default([_as_complex(one), _imag_unit(re.dtype, re.device)], 0)
    out = aten.mm.default(_as_complex(parts), aten.reshape.default(basis, [2, 1]))
    return aten.reshape.default(out, shape)


def _view_as_real(z: torch.Tensor) -> torch.Tensor:
    """[..., 2] real tensor of (re, im): z · [1, -i] as a complex dot, then the real part (a cast).
    Re(z·1) = re and Re(z·(-i)) = im exactly for finite parts."""
    real = _real_dtype(z.dtype)
    one = aten.full.default([1], 1.0, dtype=real, device=z.device)
    basis = aten.cat.default([_as_complex(one), aten.neg.default(_imag_unit(real, z.device))], 0)
    prod = aten.mm.default(aten.reshape.default(z, [-1, 1]), aten.reshape.default(basis, [1, 2]))
    return aten.reshape.default(aten._to_copy.default(prod, dtype=real), list(z.shape) + [2])


def _view_as_complex(x: torch.Tensor) -> torch.Tensor:
    return _complex(aten.select.int(x, -1, 0), aten.select.int(x, -1, 1))


def _complex_op(real: torch.Tensor, imag: torch.Tensor) -> torch.Tensor:
    """``aten.complex``: PyTorch's own implementation writes the parts into an empty tensor (a mutation)."""
    return _complex(real, imag)


def _polar(abs: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """torch-mlir lowers ``polar`` (to ``stablehlo.complex``) only for equal shapes: broadcast first.
    (Tracing a broadcasting ``polar`` goes through its ``out=`` kernel, which resizes in place.)"""
    if abs.shape == angle.shape:
        return NotImplemented
    shape = list(torch.broadcast_shapes(abs.shape, angle.shape))
    return aten.polar.default(aten.expand.default(abs, shape), aten.expand.default(angle, shape))


def _conj_physical(z: torch.Tensor) -> torch.Tensor:
    """Conjugate as complex(re, -im): complex negation lowers, conjugation does not."""
    if not z.is_complex():
        return aten.clone.default(z)
    parts = _view_as_real(z)
    return _complex(aten.select.int(parts, -1, 0), aten.neg.default(aten.select.int(parts, -1, 1)))


def _abs(z: torch.Tensor) -> torch.Tensor:
    """|z| of a complex tensor. torch-mlir lowers it *wrongly* (|Re z|: a convert to real, then abs), so
    complex inputs are rewritten (the magnitude of an FFT is the common case); real ones lower as they are."""
    if not z.is_complex():
        return NotImplemented
    parts = _view_as_real(z)
    return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(parts, parts), [-1]))


def _prims_abs(a: torch.Tensor) -> torch.Tensor:
    return aten.abs.default(a)
