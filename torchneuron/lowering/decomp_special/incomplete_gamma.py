"""Regularized incomplete gamma functions igamma (P) and igammac (Q)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..decomp_common import polevl
from ._common import _INF, _NAN, _binary_dtypes
from .erf import _erfcx_nonneg
from .gamma import _lgamma, _lgamma1p


# ------------------------------------------------------------------------------- incomplete gamma functions
# Taylor coefficients (lowest degree first) of Temme's C_0, C_1, C_2 about eta = 0 (DiDonato & Morris's d_k,n),
# derived from C_0 = 1/mu - 1/eta, C_k = C_{k-1}'(eta) / eta + (-1)^k gamma_k / mu (gamma_k: Stirling's series
# of Gamma*, 1/12, 1/288) with mu(eta) from eta^2/2 = mu - log(1 + mu).
_TEMME_C0 = [-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2, 1.1574074074074074e-3,
             3.527336860670194e-4, -1.7875514403292181e-4, 3.9192631785224378e-5, -2.1854485106799922e-6,
             -1.85406221071516e-6, 8.296711340953087e-7, -1.7665952736826078e-7, 6.707853543401498e-9,
             1.0261809784240309e-8, -4.382036018453353e-9, 9.14769958223679e-10]
_TEMME_C1 = [-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3, -9.9022633744855967e-4,
             2.0576131687242798e-4, -4.0187757201646091e-7, -1.8098550334489977e-5, 7.64916091608111e-6,
             -1.6120900894563446e-6, 4.647127802807434e-9, 1.378633446915721e-7, -5.752545603517705e-8,
             1.1951628599778148e-8]
_TEMME_C2 = [4.1335978835978836e-3, -2.6813271604938272e-3, 7.7160493827160494e-4, 2.0093878600823047e-6,
             -1.0736653226365161e-4, 5.2923448829120125e-5, -1.2760635188618728e-5, 3.423578734096138e-8,
             1.3721957309062934e-6, -6.298992138380055e-7, 1.4280614206064242e-7]


def _log1pmx(m):
    """m - log(1 + m) >= 0 without cancellation near 0: with t = m / (2 + m), log1p(m) = 2 atanh(t), so
    m - log1p(m) = m**2 / (2 + m) - 2 (t**3/3 + t**5/5 + ...) (|t| <= 1/3 for |m| <= 1/2)."""
    t = m / (2.0 + m)
    t2 = t * t
    odd = polevl(t2, [1.0 / k for k in range(17, 2, -2)])  # 1/17 ... 1/3
    small = m * m / (2.0 + m) - 2.0 * t * t2 * odd
    return torch.where(m.abs() < 0.5, small, m - torch.log1p(m))


def _igamma_temme(a, x):
    """(P, Q) by Temme's uniform asymptotic expansion (a > 20, every x): with mu = x/a - 1,
    eta = sign(mu) sqrt(2 (mu - log(1 + mu))),
    Q = e^(-a eta^2/2) (erfcx(eta sqrt(a/2)) / 2 + (C_0 + C_1/a + C_2/a^2) / sqrt(2 pi a)); the smaller of P, Q is
    computed this way (erfcx of a non-negative argument) and the other as its complement. Truncating after C_2
    leaves a relative error ~ 1e-3 / a^3."""
    mu = (x - a) / a
    lm = _log1pmx(mu)
    eta = torch.where(mu < 0.0, -1.0, 1.0) * torch.sqrt(2.0 * lm)
    near = eta.abs() < 1.0
    # closed forms cancel badly near eta = 0 (the series take over there); keep their denominators non-zero
    e_ = torch.where(near, 1.0, eta)
    m_ = torch.where(near, 1.0, mu)
    c0 = torch.where(near, polevl(eta, _TEMME_C0[::-1]), 1.0 / m_ - 1.0 / e_)
    c1 = torch.where(near, polevl(eta, _TEMME_C1[::-1]),
                     1.0 / e_ ** 3 - 1.0 / m_ ** 3 - 1.0 / m_ ** 2 - 1.0 / (12.0 * m_))
    c2 = torch.where(near, polevl(eta, _TEMME_C2[::-1]),
                     -3.0 / e_ ** 5 + (1.0 + m_) * (3.0 / m_ ** 5 + 2.0 / m_ ** 4 + 1.0 / (12.0 * m_ ** 3))
                     + 1.0 / (288.0 * m_))
    series = (c0 + (c1 + c2 / a) / a) / torch.sqrt(2.0 * math.pi * a)
    half_e = 0.5 * _erfcx_nonneg(eta.abs() * torch.sqrt(0.5 * a))
    scale = torch.exp(-a * lm)
    q_direct = scale * (half_e + series)   # eta >= 0: Q is the smaller one
    p_direct = scale * (half_e - series)   # eta < 0: P is
    upper = eta >= 0.0
    return torch.where(upper, 1.0 - q_direct, p_direct), torch.where(upper, q_direct, 1.0 - p_direct)


def _igamma_small_a(a, x, terms: int = 40, depth: int = 40):
    """(P, Q) for 0 < a <= 20 (Cephes' choice of method, every branch computed):
    - P by its power series x^a e^-x / Gamma(a+1) sum x^n / ((a+1)...(a+n)) (x <= 1 or x <= a);
    - Q by Legendre's continued fraction evaluated bottom-up at a fixed depth (x > 1.1, x >= a);
    - Q for x <= 1.1 by Q = -expm1(a log x - lgamma(a+1)) - x^a/Gamma(a) sum_{n>=1} (-x)^n / (n! (a+n)), which
      keeps Q's relative accuracy when it is tiny (small a);
    each function's complement 1 - other where that one is the accurate one."""
    logx = torch.log(x)
    # lgamma(a + 1) and lgamma(a) for tiny a would lose a's low bits in 1 + a
    lg_a1 = torch.where(a < 0.5, _lgamma1p(torch.clamp(a, max=0.5)), _lgamma(a + 1.0))
    lg_a = lg_a1 - torch.log(a)
    term = torch.ones_like(x)
    total = torch.ones_like(x)
    for n in range(1, terms + 1):
        term = term * x / (a + n)
        total = total + term
    p_series = torch.exp(a * logx - x - lg_a1) * total
    f = x + (2 * depth + 1) - a
    for n in range(depth, 0, -1):
        f = x + (2 * n - 1) - a - n * (n - a) / f
    q_cf = torch.exp(a * logx - x - lg_a) / f
    xs = torch.clamp(x, max=1.1)
    term = torch.ones_like(x)
    alt = torch.zeros_like(x)
    for n in range(1, 20):
        term = term * (-xs) / n
        alt = alt + term / (a + n)
    q_small = -torch.expm1(a * torch.log(xs) - lg_a1) - torch.exp(a * torch.log(xs) - lg_a) * alt
    p = torch.where((x <= 1.0) | (x <= a), p_series, 1.0 - q_cf)
    series_for_q = torch.where(x < 0.5, -0.4 / logx < a, x * 1.1 < a)
    q = torch.where(x > 1.1, torch.where(x < a, 1.0 - p_series, q_cf),
                    torch.where(series_for_q, 1.0 - p_series, q_small))
    return p, q


def _igamma_pq(a, x):
    """(P, Q) = regularized lower and upper incomplete gamma: a <= 20 by series / continued fraction, a > 20 by
    Temme's expansion; PyTorch's special values (see ``_igamma_special``) on top."""
    a, x = torch.broadcast_tensors(a, x)
    big = a > 20.0
    a_small = torch.where(big, 1.0, a).clamp(min=torch.finfo(a.dtype).tiny)
    x_ok = torch.where(torch.isfinite(x) & (x > 0.0), x, 1.0)
    ps, qs = _igamma_small_a(a_small, x_ok)
    a_big = torch.where(big & torch.isfinite(a), a, 21.0)
    pb, qb = _igamma_temme(a_big, x_ok)
    p = torch.where(big, pb, ps)
    q = torch.where(big, qb, qs)
    return _igamma_special(a, x, p, 1.0), _igamma_special(a, x, q, 0.0)


def _igamma_special(a, x, out, at_inf: float):
    """PyTorch's special cases in its order of precedence. ``at_inf`` is the value at x = inf (1 for P, 0 for Q),
    the value at x = 0 is the other one."""
    at_zero = 1.0 - at_inf
    out = torch.where(torch.isnan(a) | torch.isnan(x), _NAN, out)
    out = torch.where(x == _INF, at_inf, out)
    out = torch.where(a == _INF, torch.where(x == _INF, _NAN, at_zero), out)
    out = torch.where(x == 0.0, at_zero, out)
    out = torch.where(a == 0.0, torch.where(x > 0.0, at_inf, _NAN), out)
    return torch.where((a < 0.0) | (x < 0.0), _NAN, out)


def _igamma_op(which: int) -> Callable:
    def decomp(a, x):
        if not isinstance(a, torch.Tensor) or not isinstance(x, torch.Tensor):
            return NotImplemented
        comp, out = _binary_dtypes(a, x)
        return _igamma_pq(a.to(comp), x.to(comp))[which].to(out)
    return decomp
