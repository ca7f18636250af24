"""Neuron decompositions: FFT and complex-construction ops torch-mlir has no StableHLO lowering for.

What torch-mlir's StableHLO path can do with complex tensors (probed on this build): complex arguments and
results, data movement (reshape, permute, slice, cat, where), ``neg``, ``mm``/``bmm`` (complex
``dot_general``), ``polar`` (the only op that builds a complex value from reals: ``stablehlo.complex``) and
``_to_copy`` to a real dtype (``stablehlo.convert``: the real part). Complex elementwise arithmetic, reductions,
``complex``, ``view_as_real``/``view_as_complex``, ``real``/``imag`` and real→complex casts do not lower.

So complex values are built and taken apart with those pieces only (see ``_complex`` / ``_view_as_real``);
complex ``mul``/``add``/``sub``/``div`` and ``abs`` become real arithmetic on the parts, and every DFT is a complex matrix product with a twiddle matrix built in the graph (sizes are static). A
matmul DFT costs O(n²) instead of O(n log n), but it is one ``dot_general`` per transformed dimension — the
shape TensorEngine is built for — and its float32 error stays ~sqrt(n)·eps·|x|.

Known limit: building a complex value multiplies each part by 0 (``polar(x, 0)``, ``x·i``), so a non-finite
real or imaginary part turns the other part into NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

aten = torch.ops.aten

# ATen's fft_norm_mode (aten/src/ATen/native/SpectralOpsUtils.h)
_NORM_NONE, _NORM_BY_ROOT_N, _NORM_BY_N = 0, 1, 2


# ------------------------------------------------------------------------------------- complex plumbing
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


# ------------------------------------------------------------------ complex arithmetic (on real parts)
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


# --------------------------------------------------------------------------------------------- the DFT
def _twiddles(rows: int, cols: int, n: int, sign: int, weights: torch.Tensor) -> torch.Tensor:
    """W[k, j] = weights[k] · exp(sign · 2πi · k·j / n) as a [rows, cols] complex matrix.

    k·j mod n is computed in integers and mapped to (-n/2, n/2] before scaling by 2π/n, so the angle is
    within one rounding of its exact value and never larger than π (no large-argument cos/sin error)."""
    k = aten.arange.default(rows, dtype=torch.int64, device=weights.device)
    j = aten.arange.default(cols, dtype=torch.int64, device=weights.device)
    kj = aten.mul.Tensor(aten.unsqueeze.default(k, 1), aten.unsqueeze.default(j, 0))
    # k·j >= 0, so fmod is the remainder; its Scalar overload does not lower for integers, a 0-d divisor does
    m = aten.fmod.Tensor(kj, aten.scalar_tensor.default(n, dtype=torch.int64, device=weights.device))
    m = aten.where.self(aten.gt.Scalar(aten.mul.Scalar(m, 2), n), aten.sub.Scalar(m, n), m)
    angle = aten.mul.Scalar(aten._to_copy.default(m, dtype=weights.dtype), sign * 2 * math.pi / n)
    return aten.polar.default(aten.expand.default(aten.unsqueeze.default(weights, 1), [rows, cols]), angle)


def _uniform(size: int, value: float, dtype: torch.dtype, device) -> torch.Tensor:
    return aten.full.default([size], value, dtype=dtype, device=device)


def _apply_along(z: torch.Tensor, dim: int, w: torch.Tensor) -> torch.Tensor:
    """out[..., j, ...] = Σ_k z[..., k, ...] · w[k, j] along ``dim`` (one complex matmul)."""
    moved = aten.movedim.int(z, dim, -1)
    lead = list(moved.shape[:-1])
    flat = aten.reshape.default(moved, [-1, moved.shape[-1]])
    out = aten.reshape.default(aten.mm.default(flat, w), lead + [w.shape[1]])
    return aten.movedim.int(out, -1, dim)


def _norm_scale(normalization: int, n: int) -> float:
    if normalization == _NORM_BY_N:
        return 1.0 / n
    if normalization == _NORM_BY_ROOT_N:
        return 1.0 / math.sqrt(n)
    return 1.0


def _c2c_dims(z: torch.Tensor, dims: list[int], sign: int, scale: float) -> torch.Tensor:
    """Full complex DFTs along ``dims``; the normalization is folded into the first twiddle matrix."""
    real = _real_dtype(z.dtype)
    for d in dims:
        n = z.shape[d]
        z = _apply_along(z, d, _twiddles(n, n, n, sign, _uniform(n, scale, real, z.device)))
        scale = 1.0
    return z


def _canon(dims, ndim: int) -> list[int]:
    return [d % ndim for d in dims] if ndim else list(dims)


def _signal_numel(shape, dims: list[int]) -> int:
    return math.prod(shape[d] for d in dims)


def _fft_c2c(self: torch.Tensor, dim: list[int], normalization: int, forward: bool) -> torch.Tensor:
    """Complex-to-complex DFT along ``dim`` (forward: exp(-2πi·kj/n); inverse: exp(+2πi·kj/n))."""
    dims = _canon(dim, self.dim())
    if not dims:
        return aten.clone.default(self)
    scale = _norm_scale(normalization, _signal_numel(self.shape, dims))
    return _c2c_dims(self, dims, -1 if forward else 1, scale)


def _fft_r2c(self: torch.Tensor, dim: list[int], normalization: int, onesided: bool) -> torch.Tensor:
    """Real-to-complex forward DFT: the last of ``dim`` first (only its n//2+1 non-redundant outputs when
    ``onesided``), then complex DFTs along the others."""
    dims = _canon(dim, self.dim())
    last = dims[-1]
    n = self.shape[last]
    cols = n // 2 + 1 if onesided else n
    scale = _norm_scale(normalization, _signal_numel(self.shape, dims))
    w = _twiddles(n, cols, n, -1, _uniform(n, scale, self.dtype, self.device))
    z = _apply_along(_as_complex(self), last, w)
    return _c2c_dims(z, dims[:-1], -1, 1.0)


def _fft_c2r(self: torch.Tensor, dim: list[int], normalization: int, last_dim_size: int) -> torch.Tensor:
    """Complex-to-real inverse DFT of a Hermitian signal given by its first n//2+1 entries along the last
    of ``dim`` (n = ``last_dim_size``): complex inverse DFTs along the other dims, then
    x[j] = Re Σ_k c_k·X[k]·exp(2πi·kj/n) with c_k = 2 for the entries that stand for a conjugate pair
    (0 < k < n/2) and 1 for X[0] and X[n/2]; like pocketfft, later entries and Im X[0] are ignored."""
    dims = _canon(dim, self.dim())
    last = dims[-1]
    n = last_dim_size
    scale = _norm_scale(normalization, _signal_numel(self.shape, dims[:-1]) * n)
    z = _c2c_dims(self, dims[:-1], 1, 1.0)
    rows = min(z.shape[last], n // 2 + 1)
    z = aten.slice.Tensor(z, last, 0, rows)
    real = _real_dtype(self.dtype)
    k = aten.arange.default(rows, dtype=torch.int64, device=self.device)
    pair = aten.logical_and.default(aten.gt.Scalar(k, 0), aten.lt.Scalar(aten.mul.Scalar(k, 2), n))
    weights = aten.where.self(pair, _uniform(rows, 2 * scale, real, self.device),
                              _uniform(rows, scale, real, self.device))
    out = _apply_along(z, last, _twiddles(rows, n, n, 1, weights))
    return aten._to_copy.default(out, dtype=real)


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten._fft_c2c.default: _fft_c2c,
        aten._fft_r2c.default: _fft_r2c,
        aten._fft_c2r.default: _fft_c2r,
        aten.complex.default: _complex_op,
        aten.polar.default: _polar,
        aten._conj_physical.default: _conj_physical,
        aten.abs.default: _abs,
        # decompositions.py maps prims.abs back to aten.abs only when aten.abs has no entry of its own (to
        # avoid loops); _abs never produces prims.abs, so keep that mapping here
        torch.ops.prims.abs.default: _prims_abs,
        aten.view_as_real.default: _view_as_real,
        aten.view_as_complex.default: _view_as_complex,
        # complex operands only (real ones return NotImplemented and lower as they are); the prims entries
        # are decompositions.py's own prims → ATen mappings, which it skips for ops that have an entry here
        aten.mul.Tensor: _complex_mul,
        aten.add.Tensor: _complex_add,
        aten.sub.Tensor: _complex_sub,
        aten.div.Tensor: _complex_div,
        torch.ops.prims.mul.default: _prims_binary(aten.mul.Tensor),
        torch.ops.prims.add.default: _prims_binary(aten.add.Tensor),
        torch.ops.prims.sub.default: _prims_binary(aten.sub.Tensor),
        torch.ops.prims.div.default: _prims_binary(aten.div.Tensor),
    }
