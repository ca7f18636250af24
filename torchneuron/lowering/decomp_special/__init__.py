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

from collections.abc import Callable

import torch

from ._common import _unary, aten
from .erf import _erfc, _erfcx, _erfinv, _log_ndtr, _ndtri
from .float_bits import _binary_float, _frexp, _nextafter
from .gamma import _digamma, _lgamma, _mvlgamma, _polygamma
from .incomplete_gamma import _igamma_op
from .zeta import _zeta_decomp


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
