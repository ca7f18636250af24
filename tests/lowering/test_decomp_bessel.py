"""Bessel functions, Airy Ai and orthogonal polynomials (torchneuron/lowering/decomp_bessel/): lowered to
StableHLO through their decompositions, run on XLA:CPU and compared with CPU eager, edge values included."""

import math

import pytest
import torch

from tests.helpers import assert_opinfo_lowers
from tests.lowering.decomp_check import assert_matches, check_fn, lowered_fn

EDGE = [0.0, -0.0, 1e-30, 1e-6, 0.3, 0.5, 1.0, 2.0, 2.09, 5.0, 5.0001, 8.0, 8.0001, 10.0, 26.0, 90.0, 103.9,
        1e3, 1e6, 3e38, math.inf, math.nan]


def _inputs(scale: float = 10.0, n: int = 256) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    edge = torch.tensor(EDGE)
    return torch.cat([edge, -edge, torch.randn(n, generator=g) * scale])


def _slow(*names):
    return [pytest.param(n, marks=pytest.mark.slow) for n in names]


UNARY = ["i0", "special.i1e", "special.bessel_j0", "special.bessel_y1", "special.modified_bessel_k0",
         "special.scaled_modified_bessel_k1", "special.spherical_bessel_j0",
         *_slow("special.i0e", "special.i1", "special.bessel_j1", "special.bessel_y0", "special.modified_bessel_i0",
                "special.modified_bessel_i1", "special.modified_bessel_k1", "special.scaled_modified_bessel_k0")]


def _op(name):
    obj = torch
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", UNARY)
def test_unary_float32_matches_eager(name):
    check_fn(_op(name), _inputs())


def test_airy_ai_matches_eager():
    # below about -300 the phase (2/3)|x|^1.5 has float32 rounding errors of ~1e-3 rad, so there eager and
    # XLA (and the true value) differ by more than the tolerance whichever is computed; test up to there
    x = torch.cat([torch.tensor([0.0, 2.09, -2.09, 8.3203353, 26.0, 103.9, 104.0, -250.0, math.inf, -math.inf,
                                 math.nan]), torch.linspace(-30.0, 30.0, 241)])
    check_fn(torch.special.airy_ai, x)


@pytest.mark.parametrize("name", ["i0", "special.i1e"])
def test_unary_bfloat16_matches_eager(name):
    check_fn(_op(name), _inputs(scale=5.0).to(torch.bfloat16))  # bfloat16's tolerance


def test_integer_input_promotes_to_float():
    check_fn(torch.special.i0, torch.arange(-4, 5))


def _grid(xs, ns):
    x, n = torch.meshgrid(torch.tensor(xs), torch.tensor(ns), indexing="ij")
    return x.contiguous(), n.contiguous()


X_POLY = [0.0, 0.3, -0.7, 0.999, 1.0, -1.0, 1.0001, -1.0001, 1.7, -2.5, 8.0, -9.0, 100.0, math.inf, -math.inf,
          math.nan]
# beyond the 16 unrolled steps the Chebyshev closed forms take over (incl. where the recurrence overflows)
N_CHEB = [-3.0, -0.5, 0.0, 1.0, 2.0, 3.9, 6.0, 7.0, 9.0, 16.0, 17.0, 25.0, 40.0, 100.0, 1e19, math.inf, math.nan]


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "chebyshev_polynomial_v",
                                  *_slow("chebyshev_polynomial_u", "chebyshev_polynomial_w")])
def test_chebyshev_matches_eager(name):
    x, n = _grid(X_POLY, N_CHEB)
    op = getattr(torch.special, name)
    check_fn(op, x, n)


@pytest.mark.parametrize("name", ["shifted_chebyshev_polynomial_w",
                                  *_slow("shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                                         "shifted_chebyshev_polynomial_v")])
def test_shifted_chebyshev_matches_eager(name):
    x, n = _grid([v / 2 + 0.5 for v in X_POLY], N_CHEB)
    op = getattr(torch.special, name)
    check_fn(op, x, n)


@pytest.mark.parametrize("name", ["hermite_polynomial_h", *_slow("hermite_polynomial_he")])
def test_hermite_matches_eager_up_to_and_beyond_its_limit(name):
    # PyTorch returns NaN above degree 128 in float32; the unrolled recurrence does the same
    x, n = _grid([0.0, 0.5, -1.3, 3.0, -6.0, math.nan], [-1.0, 0.0, 1.0, 2.0, 5.0, 30.0, 127.0, 128.0, 129.0, 1e6])
    op = getattr(torch.special, name)
    check_fn(op, x, n)


@pytest.mark.parametrize("name", ["legendre_polynomial_p", *_slow("laguerre_polynomial_l")])
def test_legendre_and_laguerre_match_eager_and_are_nan_beyond_the_bound(name):
    x, n = _grid([0.0, 0.3, -0.9, 1.0, -1.0, 2.0, -3.0, math.inf],
                 [-2.0, -0.5, 0.0, 1.0, 2.0, 7.0, 50.0, 128.0, 129.0, 500.0])
    op = getattr(torch.special, name)
    actual, expected = lowered_fn(op, x, n), op(x, n)
    within = n <= 128
    assert_matches(actual[within], expected[within])
    # documented limit: above degree 128 only the exact special values remain, everything else is NaN
    special = (x.abs() == 1.0) if name == "legendre_polynomial_p" else (x == 0.0)
    assert_matches(actual[~within & special], expected[~within & special])
    assert torch.isnan(actual[~within & ~special]).all()


def test_scalar_overloads():
    aten = torch.ops.aten
    n = torch.tensor([0, 3, 7, 20, 40])
    x = torch.tensor([0.25, -1.5, 0.9])

    def x_scalar(n):
        return aten.special_chebyshev_polynomial_u.x_scalar(0.25, n)

    def n_scalar(x):
        return aten.special_legendre_polynomial_p.n_scalar(x, 5)

    check_fn(x_scalar, n)
    check_fn(n_scalar, x)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["special.modified_bessel_i1", "special.scaled_modified_bessel_k0",
                                  "special.laguerre_polynomial_l", "special.shifted_chebyshev_polynomial_v"])
def test_opinfo_samples_lower_and_match(name):
    assert_opinfo_lowers(name)
