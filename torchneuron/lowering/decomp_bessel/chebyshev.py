"""Chebyshev polynomials of the first..fourth kind (T, U, V, W), plain and shifted."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._common import _nan_like
from ._recurrence import _parity_sign, _unrolled

# Chebyshev families: recurrence steps unrolled before switching to the closed forms (only used for |x| > 1,
# where the recurrence and closed form agree to float32 accuracy; PyTorch itself switches to the
# trigonometric form for |x| < 1 above degree 4..8).
_CHEBYSHEV_STEPS = 16


def _acosh(x):
    """acosh for x >= 1 without the cancellation in x*x - 1 near 1 (the closed forms raise it to the n-th
    power, so its relative error is amplified by n)."""
    d = x - 1.0
    near = torch.log1p(d + torch.sqrt(d * (d + 2.0)))
    return torch.where(x > 1e4, torch.log(x) + math.log(2.0), near)


# Chebyshev kinds: degree-1 value (a function of 2x) and the closed forms. For x = cos(theta):
#   T_n = cos(n theta), U_n = sin((n+1) theta)/sin(theta), V_n = cos((n+1/2) theta)/cos(theta/2),
#   W_n = sin((n+1/2) theta)/sin(theta/2); for x = cosh(t) > 1 the same with cosh/sinh, and
#   T_n(-x) = (-1)^n T_n(x), U_n(-x) = (-1)^n U_n(x), V_n(-x) = (-1)^n W_n(x).
_FIRST = {"t": lambda x, two_x: x, "u": lambda x, two_x: two_x,
          "v": lambda x, two_x: two_x - 1.0, "w": lambda x, two_x: two_x + 1.0}


def _log_hyperbolic_ratio(kind: str, n, t):
    """log of the |x| > 1 closed form at x = cosh(t), i.e. n t + log(a bounded factor) (no overflow before
    the value itself overflows)."""
    if kind == "t":  # cosh(n t)
        factor = (1.0 + torch.exp(-2.0 * n * t)) * 0.5
    elif kind == "u":  # sinh((n+1) t) / sinh(t)
        factor = torch.expm1(-2.0 * (n + 1.0) * t) / torch.expm1(-2.0 * t)
    elif kind == "v":  # cosh((n+1/2) t) / cosh(t/2)
        factor = (1.0 + torch.exp(-(2.0 * n + 1.0) * t)) / (1.0 + torch.exp(-t))
    else:  # sinh((n+1/2) t) / sinh(t/2)
        factor = torch.expm1(-(2.0 * n + 1.0) * t) / torch.expm1(-t)
    return n * t + torch.log(factor)


def _chebyshev_hyperbolic(kind: str, x, n):
    """|x| > 1, n above the unrolled steps: the closed form, NaN where PyTorch's recurrence meets inf - inf
    (two degrees lower is already infinite: p_{k+1} = 2x inf - p_{k-1} is still inf, p_{k+2} is not)."""
    neg = x < 0.0
    mirror = {"v": "w", "w": "v"}.get(kind, kind)  # V_n(-x) = (-1)^n W_n(x) and vice versa
    t = _acosh(torch.abs(x))
    pos_val = torch.exp(_log_hyperbolic_ratio(kind, n, t))
    neg_val = torch.exp(_log_hyperbolic_ratio(mirror, n, t))
    prev_inf = torch.where(neg, torch.exp(_log_hyperbolic_ratio(mirror, n - 2.0, t)),
                           torch.exp(_log_hyperbolic_ratio(kind, n - 2.0, t))) == math.inf
    value = torch.where(neg, neg_val, pos_val) * _parity_sign(n, neg)
    return torch.where(prev_inf, _nan_like(x), value)


def _chebyshev_trig(kind: str, x, n):
    """|x| < 1: PyTorch's trigonometric forms, including its fallbacks where the denominator rounds to 0."""
    theta = torch.acos(x)
    if kind == "t":
        return torch.cos(n * theta)
    if kind == "u":
        s = torch.sin(theta)
        return torch.where(s != 0.0, torch.sin((n + 1.0) * theta) / s,
                           (n + 1.0) * torch.cos((n + 1.0) * theta) / x)
    half = theta / 2.0
    if kind == "v":
        return torch.where(torch.sin(half) != 1.0, torch.cos((n + 0.5) * theta) / torch.cos(half),
                           (n + n + 1.0) * _parity_sign(n, torch.ones_like(x, dtype=torch.bool)))
    at_one = torch.where(x > 0.0, n + n + 1.0, _parity_sign(n, torch.ones_like(x, dtype=torch.bool)))
    return torch.where(torch.cos(half) != 1.0, torch.sin((n + 0.5) * theta) / torch.sin(half), at_one)


def _chebyshev_at_one(kind: str, x, n):
    """|x| == 1 (exact integers)."""
    neg = x < 0.0
    sign = _parity_sign(n, neg)
    if kind == "t":
        return sign
    if kind == "u":
        return sign * (n + 1.0)
    if kind == "v":
        return torch.where(neg, sign * (n + n + 1.0), torch.ones_like(x))
    return torch.where(neg, sign, n + n + 1.0)


def _chebyshev(kind: str, trig_above: int) -> Callable:
    """Chebyshev polynomial of the first..fourth kind (T, U, V, W): n < 0 gives 0, |x| == 1 exact values,
    |x| < 1 and n > ``trig_above`` the trigonometric form (PyTorch's thresholds), otherwise the recurrence
    p_k = 2x p_{k-1} - p_{k-2} for n <= _CHEBYSHEV_STEPS and the hyperbolic closed form above. The shifted
    polynomials are the same functions of 2x - 1."""
    def kernel(x, n):
        two_x = x + x
        beyond = _chebyshev_hyperbolic(kind, x, n)
        out = _unrolled(n, _FIRST[kind](x, two_x), lambda k, p, q: two_x * q - p, _CHEBYSHEV_STEPS, beyond)
        inside = torch.abs(x) < 1.0
        # acos of |x| >= 1 is unused below; clamp so it stays finite
        xin = torch.where(inside, x, torch.zeros_like(x))
        out = torch.where(inside & (n > float(trig_above)), _chebyshev_trig(kind, xin, n), out)
        out = torch.where(torch.abs(x) == 1.0, _chebyshev_at_one(kind, x, n), out)
        return torch.where(n < 0.0, torch.zeros_like(x), out)
    return kernel


def _shifted(kernel: Callable) -> Callable:
    def shifted(x, n):
        return kernel(x + x - 1.0, n)
    return shifted
