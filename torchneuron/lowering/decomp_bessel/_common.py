"""Dtype rules and small tensor helpers shared by the Bessel-type and polynomial decompositions."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

aten = torch.ops.aten


# ----------------------------------------------------------------------------------------------- helpers
def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _float_result(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


def _unary(kernel: Callable) -> Callable:
    """A float32 (float64) elementwise kernel as a decomposition: integer inputs promote to the default float
    dtype, half-precision inputs are upcast and the result rounded back."""
    def decomp(x):
        out_dtype = _float_result(x.dtype)
        return kernel(x.to(_compute_dtype(out_dtype))).to(out_dtype)
    return decomp


def _like(x: torch.Tensor, value: float) -> torch.Tensor:
    return torch.full_like(x, value)


def _nan_like(x: torch.Tensor) -> torch.Tensor:
    return _like(x, math.nan)


def _odd_extension(x, value):
    """An odd function from its values at |x| (I1, J1)."""
    return torch.where(x < 0.0, -value, value)
