"""DFTs (``_fft_c2c`` / ``_fft_r2c`` / ``_fft_c2r``) as complex matmuls with in-graph twiddle matrices."""

from __future__ import annotations

import math

import torch

from .complex_parts import _as_complex, _real_dtype

aten = torch.ops.aten

# ATen's fft_norm_mode (aten/src/ATen/native/SpectralOpsUtils.h)
_NORM_NONE, _NORM_BY_ROOT_N, _NORM_BY_N = 0, 1, 2


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
