"""Dtype rules and constants shared by the special-function decompositions (the Horner evaluator,
``polevl``, is in ``lowering/decomp_common.py``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

aten = torch.ops.aten

_INF = float("inf")
_NAN = float("nan")


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


def _eps(x) -> float:
    return torch.finfo(x.dtype).eps
