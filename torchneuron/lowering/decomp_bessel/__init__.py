"""Neuron decompositions: Bessel functions, the Airy function and orthogonal polynomials.

torch-mlir has no StableHLO lowering for any of these, so each is rewritten into elementwise ATen ops
(``exp``, ``log``, ``sqrt``, ``sin``/``cos``, ``acos``, ``where``, ...) that it does lower.

The Bessel-type functions follow PyTorch's CPU kernels (ATen/native/Math.h, after Cephes): the same
Chebyshev series (evaluated with an unrolled Clenshaw recurrence), rational approximations and asymptotic
forms over the same intervals, with every branch computed and the right one picked with ``where`` (tracing
allows no data-dependent control flow). The coefficient tables are Cephes' (as in PyTorch).

The orthogonal polynomials take the degree ``n`` as a tensor, so the three-term recurrence PyTorch loops
``n`` times is unrolled for a fixed number of steps and the step equal to ``n`` is selected; beyond that
bound the Chebyshev families use their exact trigonometric/hyperbolic closed forms, Hermite stops where
PyTorch itself stops (NaN above degree 128), and Laguerre/Legendre (no closed form) return NaN above
``_POLY_STEPS``. Half-precision inputs are computed in float32 and rounded back, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._common import _unary, aten
from ._recurrence import _binary
from .airy import _airy_ai
from .bessel_j_y import _j0, _j1, _spherical_j0, _y0, _y1
from .chebyshev import _chebyshev, _shifted
from .hermite_laguerre_legendre import _hermite_h, _hermite_he, _laguerre_l, _legendre_p
from .modified import _i0, _i0e, _i1, _i1e, _k_impl, _modified_i1


def table() -> dict[torch._ops.OperatorBase, Callable]:
    unary = {
        "i0": _i0, "special_i0e": _i0e, "special_i1": _i1, "special_i1e": _i1e,
        "special_bessel_j0": _j0, "special_bessel_j1": _j1, "special_bessel_y0": _y0, "special_bessel_y1": _y1,
        "special_modified_bessel_i0": _i0, "special_modified_bessel_i1": _modified_i1,
        "special_modified_bessel_k0": lambda x: _k_impl(x, 0, False),
        "special_modified_bessel_k1": lambda x: _k_impl(x, 1, False),
        "special_scaled_modified_bessel_k0": lambda x: _k_impl(x, 0, True),
        "special_scaled_modified_bessel_k1": lambda x: _k_impl(x, 1, True),
        "special_spherical_bessel_j0": _spherical_j0, "special_airy_ai": _airy_ai,
    }
    out: dict = {getattr(aten, name).default: _unary(fn) for name, fn in unary.items()}
    polys = {
        "special_chebyshev_polynomial_t": _chebyshev("t", 6), "special_chebyshev_polynomial_u": _chebyshev("u", 8),
        "special_chebyshev_polynomial_v": _chebyshev("v", 8), "special_chebyshev_polynomial_w": _chebyshev("w", 8),
        "special_shifted_chebyshev_polynomial_t": _shifted(_chebyshev("t", 6)),
        "special_shifted_chebyshev_polynomial_u": _shifted(_chebyshev("u", 6)),
        "special_shifted_chebyshev_polynomial_v": _shifted(_chebyshev("v", 6)),
        "special_shifted_chebyshev_polynomial_w": _shifted(_chebyshev("w", 4)),
        "special_hermite_polynomial_h": _hermite_h, "special_hermite_polynomial_he": _hermite_he,
        "special_laguerre_polynomial_l": _laguerre_l, "special_legendre_polynomial_p": _legendre_p,
    }
    for name, kernel in polys.items():
        out.update(_binary(kernel, name))
    return out
