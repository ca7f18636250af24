"""Hermite (physicists' and probabilists'), Laguerre and Legendre polynomials: no closed form, so only the
unrolled recurrence."""

from __future__ import annotations

import torch

from ._common import _nan_like
from ._recurrence import _parity_sign, _unrolled

# Laguerre/Legendre degrees evaluated exactly (the unrolled recurrence); larger degrees give NaN. Hermite
# uses PyTorch's own limit (128 in float32), which equals this.
_POLY_STEPS = 128


def _hermite_limit(x) -> int:
    return 512 if x.dtype == torch.float64 else 128  # PyTorch's getHermitianLimit


def _hermite_h(x, n):
    """Physicists' Hermite H_n by its recurrence H_k = 2x H_{k-1} - 2(k-1) H_{k-2}, unrolled up to PyTorch's
    own degree limit (NaN above it, as PyTorch)."""
    two_x = x + x
    out = _unrolled(n, two_x, lambda k, p, q: two_x * q - float(2 * (k - 1)) * p, _hermite_limit(x), _nan_like(x))
    return torch.where(n < 0.0, torch.zeros_like(x), out)


def _hermite_he(x, n):
    """Probabilists' Hermite He_n: He_k = x He_{k-1} - (k-1) He_{k-2}, unrolled to PyTorch's limit."""
    out = _unrolled(n, x, lambda k, p, q: x * q - float(k - 1) * p, _hermite_limit(x), _nan_like(x))
    return torch.where(n < 0.0, torch.zeros_like(x), out)


def _laguerre_l(x, n):
    """Laguerre L_n: L_k = ((2k-1-x) L_{k-1} - (k-1) L_{k-2}) / k, unrolled for n <= _POLY_STEPS; larger
    degrees give NaN (no closed form; PyTorch's loop has no bound). L_n(0) = 1 for every n >= 0."""
    one_minus_x = 1.0 - x
    out = _unrolled(n, one_minus_x,
                    lambda k, p, q: ((float(2 * (k - 1)) + one_minus_x) * q - float(k - 1) * p) / float(k),
                    _POLY_STEPS, _nan_like(x))
    out = torch.where(x == 0.0, torch.ones_like(x), out)
    return torch.where(n < 0.0, torch.zeros_like(x), out)


def _legendre_p(x, n):
    """Legendre P_n: P_k = ((2k-1) x P_{k-1} - (k-1) P_{k-2}) / k, unrolled for n <= _POLY_STEPS; larger
    degrees give NaN except at |x| == 1 (exact +-1)."""
    out = _unrolled(n, x, lambda k, p, q: (float(2 * k - 1) * x * q - float(k - 1) * p) / float(k),
                    _POLY_STEPS, _nan_like(x))
    out = torch.where(torch.abs(x) == 1.0, _parity_sign(n, x < 0.0), out)
    return torch.where(n < 0.0, torch.zeros_like(x), out)
