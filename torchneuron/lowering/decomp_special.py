"""Neuron decompositions: gamma, error-function and related special functions torch-mlir has no StableHLO
lowering for.

Each function is rewritten into elementwise ops torch-mlir lowers (exp, log, log1p, erf, pow, tan, sin,
where, bit casts, ...). Iterative algorithms (recurrence shifts, series, Euler-Maclaurin sums) run a fixed
number of unrolled steps selected with ``where`` so that the graph is static; every branch is computed and
the right one chosen per element. Float tensors are compared with float literals only (``x < 1.0``): torch-mlir
folds a comparison of a constant float tensor with an integer literal wrongly (``full_like(x, 3.0) < 1`` becomes
true), and polygamma's order is such a constant. Half-precision inputs are computed in float32 and cast back, as
PyTorch's CPU kernels do; integer inputs promote to the default float dtype.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

aten = torch.ops.aten

_INF = float("inf")
_NAN = float("nan")
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_EULER = 0.57721566490153286061


# ---------------------------------------------------------------------------------------------- helpers
def _compute_dtype(dtype: torch.dtype) -> tuple[torch.dtype, torch.dtype]:
    """(dtype to compute in, dtype of the result) for an input dtype."""
    out = dtype if dtype.is_floating_point else torch.get_default_dtype()
    return (torch.float32 if out in (torch.bfloat16, torch.float16) else out), out


def _unary(fn: Callable) -> Callable:
    """A unary float kernel ``fn`` (computing in float32/float64) applied with PyTorch's dtype rules."""
    def decomp(x):
        comp, out = _compute_dtype(x.dtype)
        return fn(x.to(comp)).to(out)
    return decomp


def _binary_dtypes(a, b) -> tuple[torch.dtype, torch.dtype]:
    return _compute_dtype(torch.result_type(a, b))


def _polevl(x, coeffs):
    """Horner evaluation, highest-degree coefficient first (Cephes ``polevl``)."""
    acc = torch.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def _eps(x) -> float:
    return torch.finfo(x.dtype).eps


def _exp_sq(x, sign: float):
    """exp(sign * x**2) without the rounding error of x**2 (which grows with x**2 and would cost ~x**2 ulps):
    x = hi + lo with hi on a 2**-8 grid (hi**2 is exact), exp(hi**2) * exp(2*hi*lo + lo**2)."""
    x = x.abs().clamp(max=40.0)  # beyond 40 the result is 0 or inf in every float format
    hi = torch.floor(x * 256.0) / 256.0
    lo = x - hi
    big = torch.exp(sign * (hi * hi))
    # e * (1 + expm1(d)) rather than e * exp(d): XLA's simplifier folds exp(a) * exp(b) into exp(a + b)
    return big * (1.0 + torch.expm1(sign * (lo * (2.0 * hi + lo))))


def _abs_sinpi(x):
    """|sin(pi*x)| with an exact argument reduction (x - round(x) is exact in binary floating point), so it is
    exactly 0 at the integers."""
    return torch.sin(math.pi * (x - torch.round(x))).abs()


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
    mid = _polevl(x, _ERFCX_P) / _polevl(x, _ERFCX_Q)
    z = 1.0 / torch.clamp(x, min=8.0)
    # R(x)/S(x) = z * R'(z)/S'(z) with the coefficient lists reversed (degrees 5 and 6)
    large = z * _polevl(z, _ERFCX_R[::-1]) / _polevl(z, _ERFCX_S[::-1])
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
    central = q * _polevl(r, _NDTRI_A) / _polevl(r, _NDTRI_B)
    m = torch.minimum(p, 1.0 - p).clamp(min=torch.finfo(p.dtype).tiny)
    t = torch.sqrt(-2.0 * torch.log(m))
    tail = _polevl(t, _NDTRI_C) / _polevl(t, _NDTRI_D)
    tail = torch.where(p < 0.5, tail, -tail)
    out = torch.where((p > 0.02425) & (p < 0.97575), central, tail)
    out = torch.where(p == 0.0, -_INF, torch.where(p == 1.0, _INF, out))
    return torch.where((p < 0.0) | (p > 1.0), _NAN, out)


def _erfinv(x):
    """Inverse error function: Giles' single-precision approximation ("Approximating the erfinv function",
    2010), a polynomial in w = -log(1 - x**2) (shifted) or sqrt(w) in the tails; +-1 -> +-inf, nan outside."""
    w = -torch.log((1.0 - x) * (1.0 + x))
    w1 = w - 2.5
    p1 = _polevl(w1, [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                      -0.00125372503, -0.00417768164, 0.246640727, 1.50140941])
    w2 = torch.sqrt(w.clamp(min=5.0)) - 3.0
    p2 = _polevl(w2, [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                      -0.0076224613, 0.00943887047, 1.00167406, 2.83297682])
    out = torch.where(w < 5.0, p1, p2) * x
    return torch.where(x.abs() == 1.0, x * _INF, out)


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
    series = r * _polevl(r2, [-1.0 / 1680, 1.0 / 1260, -1.0 / 360, 1.0 / 12])
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
    core = t * _polevl(t, coeffs)
    shifted = core + torch.log(prod)
    one_up = core - torch.log1p(x - 1.0)
    two_up = core - torch.log(x * (x + 1.0))
    out = torch.where(x < 0.5, two_up, torch.where(lo, one_up, shifted))
    return torch.where(x >= 8.0, _lgamma_stirling(torch.clamp(x, min=8.0)), out)


def _lgamma1p(a):
    """lgamma(1 + a) for |a| <= 1/2 without rounding 1 + a: the series about 2 at t = a, minus log1p(a)."""
    return a * _polevl(a, _lgamma2_coeffs()) - torch.log1p(a)


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
    tail = z * _polevl(z, [8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
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


# Euler-Maclaurin denominators (2k)! / B_2k of Cephes' zeta.
_ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18]


def _zeta_pos(x, q):
    """Hurwitz zeta for q > 0, Cephes' algorithm with its early exits as masks: the first ten terms summed
    directly, the rest by Euler-Maclaurin at w = q + 9 with up to 12 Bernoulli corrections.
    The sum is carried relative to q^-(x-1) (terms (q/(q+i))^x / q <= 1/q), so that for large q the terms,
    which underflow float32 long before their sum does (XLA:CPU flushes subnormals), keep their value."""
    eps = _eps(x)
    inv_q = 1.0 / q
    s = inv_q
    b = s
    for i in range(1, 10):
        b = torch.pow(q / (q + i), x) * inv_q
        s = s + b
    done = b < eps * s           # the remaining terms are negligible: Cephes returns here
    w = q + 9.0
    s = torch.where(done, s, s + b * w / (x - 1.0) - 0.5 * b)
    a = torch.ones_like(x)
    k = torch.zeros_like(x)
    for den in _ZETA_A:
        a = a * (x + k)
        b = b / w
        t = a * b / den
        s = torch.where(done, s, s + t)
        done = done | ((t / s).abs() < eps)
        k = k + 1.0
        a = a * (x + k)
        b = b / w
        k = k + 1.0
    return torch.pow(q, 1.0 - x) * s


def _zeta(x, q):
    """Hurwitz zeta(x, q) = sum_k (q + k)^-x. PyTorch's domain: inf at x == 1 and at non-positive integer q,
    nan for x < 1 and for q < 0 with non-integer x. For q < 0 (x an integer) the terms with a negative base are
    (-1)^x times those of a zeta at r = -q counted down to g = r - (ceil(r) - 1) in (0, 1] (exact, unlike
    frac(q) when q is a tiny negative number), so with f = q - floor(q):
    zeta(x, q) = zeta(x, f) + (-1)^x (zeta(x, g) - zeta(x, r + 1)), all at positive arguments."""
    x, q = torch.broadcast_tensors(x, q)
    neg = q < 0.0
    r = -q
    f = q - torch.floor(q)
    g = r - (torch.ceil(r) - 1.0)
    # one evaluation over the stacked arguments keeps the graph a single copy of the algorithm; lanes that
    # are not needed (or not in the domain) compute garbage that the ``where``s below drop
    zs = _zeta_pos(torch.stack([x, x, x]), torch.stack([torch.where(neg, f, q), g, r + 1.0]))
    parity = torch.where(torch.floor(x * 0.5) == x * 0.5, 1.0, -1.0)
    out = torch.where(neg, zs[0] + parity * (zs[1] - zs[2]), zs[0])
    out = torch.where((q <= 0.0) & (x != torch.floor(x)), _NAN, out)
    out = torch.where((q <= 0.0) & (q == torch.floor(q)), _INF, out)
    out = torch.where(x < 1.0, _NAN, out)
    out = torch.where((x == _INF) & (q > 1.0), _NAN, out)  # PyTorch's series gives inf * 0 there
    return torch.where(x == 1.0, _INF, out)


def _zeta_decomp(x, q):
    if not isinstance(x, torch.Tensor) or not isinstance(q, torch.Tensor):
        return NotImplemented
    comp, out = _binary_dtypes(x, q)
    return _zeta(x.to(comp), q.to(comp)).to(out)


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
    odd = _polevl(t2, [1.0 / k for k in range(17, 2, -2)])  # 1/17 ... 1/3
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
    c0 = torch.where(near, _polevl(eta, _TEMME_C0[::-1]), 1.0 / m_ - 1.0 / e_)
    c1 = torch.where(near, _polevl(eta, _TEMME_C1[::-1]),
                     1.0 / e_ ** 3 - 1.0 / m_ ** 3 - 1.0 / m_ ** 2 - 1.0 / (12.0 * m_))
    c2 = torch.where(near, _polevl(eta, _TEMME_C2[::-1]),
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


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten.erfc.default: _unary(_erfc),
        aten.special_erfcx.default: _unary(_erfcx),
        aten.special_log_ndtr.default: _unary(_log_ndtr),
        aten.special_ndtri.default: _unary(_ndtri),
        aten.erfinv.default: _unary(_erfinv),
        aten.lgamma.default: _unary(_lgamma),
        aten.digamma.default: _unary(_digamma),
        aten.polygamma.default: _polygamma,
        aten.mvlgamma.default: _mvlgamma,
        aten.special_zeta.default: _zeta_decomp,
        aten.igamma.default: _igamma_op(0),
        aten.igammac.default: _igamma_op(1),
        aten.nextafter.default: _binary_float(_nextafter),
        aten.frexp.Tensor: _frexp,
    }
