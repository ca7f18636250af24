"""Gamma-function family: lgamma, digamma, polygamma, mvlgamma."""

from __future__ import annotations

import functools
import math

import torch

from ..decomp_common import polevl
from ._common import _INF, _NAN, _compute_dtype
from .zeta import _zeta

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_EULER = 0.57721566490153286061


def _abs_sinpi(x):
    """|sin(pi*x)| with an exact argument reduction (x - round(x) is exact in binary floating point), so it is
    exactly 0 at the integers."""
    return torch.sin(math.pi * (x - torch.round(x))).abs()


# ------------------------------------------------------------------------------------- gamma functions
@functools.cache
def _zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 for an integer k >= 2 in double precision (direct sum plus the Euler-Maclaurin tail)."""
    n = 64
    s = sum(m ** -k for m in range(2, n))
    return s + n ** (1 - k) / (k - 1) + 0.5 * n ** -k + k * n ** (-k - 1) / 12.0 \
        - k * (k + 1) * (k + 2) * n ** (-k - 3) / 720.0


@functools.cache
def _lgamma2_coeffs() -> list[float]:
    """Taylor coefficients (highest first, constant term 0 dropped) of lgamma(2 + t) / t:
    lgamma(2+t) = (1 - gamma) t + sum_{k>=2} (-1)^k (zeta(k) - 1) / k t^k; |t| <= 0.5 needs 22 terms."""
    c = [1.0 - _EULER] + [(-1) ** k * _zeta_minus_one(k) / k for k in range(2, 24)]
    return c[::-1]


def _lgamma_stirling(z):
    """Stirling's series for z >= 8 (error < 1e-12): (z-1/2)(log z - 1) + (log(2 pi) - 1)/2 + sum B2k/..."""
    r = 1.0 / z
    r2 = r * r
    series = r * polevl(r2, [-1.0 / 1680, 1.0 / 1260, -1.0 / 360, 1.0 / 12])
    return (z - 0.5) * (torch.log(z) - 1.0) + (_LOG_SQRT_2PI - 0.5) + series


def _lgamma_pos(x):
    """lgamma for x > 0. x >= 8: Stirling. 1.5 <= x < 8: shift down by up to 6 to [1.5, 2.5) (adding the log of
    the product of the shifts) and use the Taylor series about 2, which keeps the relative accuracy near the
    zero at 2. x < 1.5: shift up (lgamma(x) = lgamma(x+1) - log x), with log1p about the zero at 1."""
    coeffs = _lgamma2_coeffs()
    y = x
    prod = torch.ones_like(x)
    for _ in range(6):
        down = y >= 2.5
        y = torch.where(down, y - 1.0, y)
        prod = torch.where(down, prod * y, prod)
    lo = x < 1.5
    # t = (argument moved to [1.5, 2.5)) - 2, formed without rounding: x - 1 and y - 2 are exact there
    t = torch.where(x < 0.5, x, torch.where(lo, x - 1.0, y - 2.0))
    core = t * polevl(t, coeffs)
    shifted = core + torch.log(prod)
    one_up = core - torch.log1p(x - 1.0)
    two_up = core - torch.log(x * (x + 1.0))
    out = torch.where(x < 0.5, two_up, torch.where(lo, one_up, shifted))
    return torch.where(x >= 8.0, _lgamma_stirling(torch.clamp(x, min=8.0)), out)


def _lgamma1p(a):
    """lgamma(1 + a) for |a| <= 1/2 without rounding 1 + a: the series about 2 at t = a, minus log1p(a)."""
    return a * polevl(a, _lgamma2_coeffs()) - torch.log1p(a)


def _lgamma(x):
    """log|Gamma(x)|; x <= 0 by reflection lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x), so poles
    (non-positive integers, -inf) give inf."""
    neg = x <= 0.0
    z = torch.where(neg, 1.0 - x, x)
    pos = _lgamma_pos(z)
    refl = math.log(math.pi) - torch.log(_abs_sinpi(x)) - pos
    out = torch.where(neg, refl, pos)
    return torch.where(torch.isinf(x), _INF, out)


def _digamma_pos(x, steps: int = 10):
    """digamma for x > 0 (PyTorch's algorithm): recurrence psi(x) = psi(x+1) - 1/x up to x >= 10, then the
    asymptotic series log x - 1/(2x) - sum B2k / (2k x^2k)."""
    acc = torch.zeros_like(x)
    for _ in range(steps):
        small = x < 10.0
        acc = torch.where(small, acc - 1.0 / x, acc)
        x = torch.where(small, x + 1.0, x)
    z = 1.0 / (x * x)
    tail = z * polevl(z, [8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                           -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                           8.33333333333333333333E-2])
    return acc + torch.log(x) - 0.5 / x - tail


def _digamma(x):
    """digamma with PyTorch's special values: psi(+-0) = -+inf, nan at negative integers and -inf; x < 0 by
    reflection psi(x) = psi(1-x) - pi / tan(pi x) (tan of the exactly reduced argument)."""
    neg = x < 0.0
    pos = _digamma_pos(torch.where(neg, 1.0 - x, x))
    r = x - torch.round(x)
    out = torch.where(neg, pos - math.pi / torch.tan(math.pi * r), pos)
    out = torch.where(neg & (x == torch.trunc(x)), _NAN, out)
    return torch.where(x == 0.0, -1.0 / x, out)


def _trigamma(x):
    """polygamma(1, x), PyTorch's algorithm: reflection for x < 0.5, six recurrence steps, asymptotic series."""
    refl = x < 0.5
    s = torch.sin(x * math.pi)  # not reduced, as PyTorch computes it (its finite values at the poles included)
    acc = torch.where(refl, -(math.pi ** 2) / (s * s), torch.zeros_like(x))
    y = torch.where(refl, 1.0 - x, x)
    for _ in range(6):
        acc = acc + 1.0 / (y * y)
        y = y + 1.0
    ixx = 1.0 / (y * y)
    acc = acc + (1.0 + 1.0 / (2.0 * y) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / y
    return torch.where(refl, -acc, acc)


def _polygamma(n: int, x):
    """polygamma(n, x): digamma (n = 0), trigamma (n = 1), else (-1)^(n+1) n! zeta(n+1, x) (PyTorch's)."""
    comp, out = _compute_dtype(x.dtype)
    xf = x.to(comp)
    if n == 0:
        r = _digamma(xf)
    elif n == 1:
        r = _trigamma(xf)
    else:
        r = (-1.0) ** (n + 1) * math.factorial(n) * _zeta(torch.full_like(xf, n + 1.0), xf)
    return r.to(out)


def _mvlgamma(x, p: int):
    """Multivariate log-gamma: p(p-1)/4 log(pi) + sum_{i<p} lgamma(x - i/2) (the domain check x > (p-1)/2 is
    PyTorch's data-dependent error and is not repeated here)."""
    comp, out = _compute_dtype(x.dtype)
    xf = x.to(comp)
    acc = torch.full_like(xf, p * (p - 1) / 4.0 * math.log(math.pi))
    for i in range(p):
        acc = acc + _lgamma(xf - i / 2.0)
    return acc.to(out)
