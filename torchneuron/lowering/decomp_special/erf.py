"""Error-function family: erfc, erfcx, log_ndtr, ndtri, erfinv."""

from __future__ import annotations

import math

import torch

from ..decomp_common import polevl
from ._common import _INF, _NAN


def _exp_sq(x, sign: float):
    """exp(sign * x**2) without the rounding error of x**2 (which grows with x**2 and would cost ~x**2 ulps):
    x = hi + lo with hi on a 2**-8 grid (hi**2 is exact), exp(hi**2) * exp(2*hi*lo + lo**2)."""
    x = x.abs().clamp(max=40.0)  # beyond 40 the result is 0 or inf in every float format
    hi = torch.floor(x * 256.0) / 256.0
    lo = x - hi
    big = torch.exp(sign * (hi * hi))
    # e * (1 + expm1(d)) rather than e * exp(d): XLA's simplifier folds exp(a) * exp(b) into exp(a + b)
    return big * (1.0 + torch.expm1(sign * (lo * (2.0 * hi + lo))))


# ------------------------------------------------------------------------------------- error functions
# erfc/erfcx for x >= 0.5 use Cephes' rational approximations of erfc(x) * exp(x**2) (ndtr.c), which are
# exactly erfcx; for x >= 8 the R/S pair is rewritten in 1/x so it stays finite up to x = inf.
_ERFCX_P = [2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
            4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
            9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2]
_ERFCX_Q = [1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
            9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
            1.65666309194161350182E3, 5.57535340817727675546E2]
_ERFCX_R = [5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
            6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0]
_ERFCX_S = [1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
            1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0]


def _erfcx_nonneg(x):
    """erfcx(x) for x >= 0 (other x give garbage, masked by callers)."""
    small = _exp_sq(x, 1.0) * (1.0 - torch.erf(x))       # |x| < 0.5: erfc has no cancellation there
    mid = polevl(x, _ERFCX_P) / polevl(x, _ERFCX_Q)
    z = 1.0 / torch.clamp(x, min=8.0)
    # R(x)/S(x) = z * R'(z)/S'(z) with the coefficient lists reversed (degrees 5 and 6)
    large = z * polevl(z, _ERFCX_R[::-1]) / polevl(z, _ERFCX_S[::-1])
    return torch.where(x < 0.5, small, torch.where(x < 8.0, mid, large))


def _erfcx(x):
    """Scaled complementary error function exp(x**2) * erfc(x); for x < 0 by erfcx(x) = 2 exp(x**2) - erfcx(-x)
    (overflowing to inf like PyTorch's)."""
    pos = _erfcx_nonneg(x.abs())
    e = _exp_sq(x, 1.0)
    near = e * (1.0 - torch.erf(x))   # |x| < 0.5, either sign
    return torch.where(x >= 0.5, pos, torch.where(x > -0.5, near, 2.0 * e - pos))


def _erfc(x):
    """erfc: 1 - erf(x) near 0, exp(-x**2) * erfcx(x) for x >= 0.5 (keeps full relative accuracy in the
    tail down to the underflow), 2 - erfc(-x) for x <= -0.5."""
    a = x.abs()
    tail = _exp_sq(a, -1.0) * _erfcx_nonneg(a)
    out = torch.where(x < 0.0, 2.0 - tail, tail)
    return torch.where(a < 0.5, 1.0 - torch.erf(x), out)


def _log_ndtr(x):
    """log of the standard normal CDF, PyTorch's formula: log(erfcx(-x/sqrt2)/2) - x**2/2 for x < -1 (no
    underflow), log1p(-erfc(x/sqrt2)/2) otherwise."""
    t = x * math.sqrt(0.5)
    left = torch.log(_erfcx(-t) / 2.0) - t * t
    right = torch.log1p(-_erfc(t) / 2.0)
    return torch.where(x < -1.0, left, right)


# Acklam's rational approximation of the normal quantile (relative error < 1.2e-9).
_NDTRI_A = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
            -3.066479806614716e+01, 2.506628277459239e+00]
_NDTRI_B = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
            -1.328068155288572e+01, 1.0]
_NDTRI_C = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
            4.374664141464968e+00, 2.938163982698783e+00]
_NDTRI_D = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00, 1.0]


def _ndtri(p):
    """Normal quantile: Acklam's central rational function in (p-0.5)**2 for 0.02425 < p < 0.97575, a
    rational function of sqrt(-2 log(min(p, 1-p))) in the tails (1-p is exact for p >= 0.5);
    ndtri(0) = -inf, ndtri(1) = inf, nan outside [0, 1]."""
    q = p - 0.5
    r = q * q
    central = q * polevl(r, _NDTRI_A) / polevl(r, _NDTRI_B)
    m = torch.minimum(p, 1.0 - p).clamp(min=torch.finfo(p.dtype).tiny)
    t = torch.sqrt(-2.0 * torch.log(m))
    tail = polevl(t, _NDTRI_C) / polevl(t, _NDTRI_D)
    tail = torch.where(p < 0.5, tail, -tail)
    out = torch.where((p > 0.02425) & (p < 0.97575), central, tail)
    out = torch.where(p == 0.0, -_INF, torch.where(p == 1.0, _INF, out))
    return torch.where((p < 0.0) | (p > 1.0), _NAN, out)


def _erfinv(x):
    """Inverse error function: Giles' single-precision approximation ("Approximating the erfinv function",
    2010), a polynomial in w = -log(1 - x**2) (shifted) or sqrt(w) in the tails; +-1 -> +-inf, nan outside."""
    w = -torch.log((1.0 - x) * (1.0 + x))
    w1 = w - 2.5
    p1 = polevl(w1, [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                      -0.00125372503, -0.00417768164, 0.246640727, 1.50140941])
    w2 = torch.sqrt(w.clamp(min=5.0)) - 3.0
    p2 = polevl(w2, [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                      -0.0076224613, 0.00943887047, 1.00167406, 2.83297682])
    out = torch.where(w < 5.0, p1, p2) * x
    return torch.where(x.abs() == 1.0, x * _INF, out)
