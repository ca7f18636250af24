"""Comparisons and the ops torch-mlir builds from them (sign, trunc, angle), avoiding its constant folds."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

aten = torch.ops.aten


def _compare(op: torch._ops.OpOverload) -> Callable:
    """Two torch-mlir defects in comparisons, avoided here; everything else goes to torch-mlir's own lowering
    (``NotImplemented``):

    - it emits ``stablehlo.compare`` on i1 operands with a SIGNED comparison type, which XLA's verifier
      rejects (booleans compare UNSIGNED): bools compare as int32 0/1 instead (same order, same result);
    - it folds a comparison of a float tensor with known contents against an *integer* literal wrongly
      (``full(3.0) < 1`` folds to true): the literal becomes the float PyTorch converts it to anyway."""

    def compare(a, b):
        a_bool = isinstance(a, torch.Tensor) and a.dtype == torch.bool
        b_bool = (isinstance(b, torch.Tensor) and b.dtype == torch.bool) or isinstance(b, bool)
        if a_bool and b_bool:
            b = b.to(torch.int32) if isinstance(b, torch.Tensor) else int(b)
            return op(a.to(torch.int32), b)
        if isinstance(a, torch.Tensor) and a.is_floating_point() and isinstance(b, int) and not isinstance(b, bool):
            return op(a, float(b))
        return NotImplemented

    return compare


def _sign(x):
    """torch-mlir folds ``sign`` of a constant to -1 (and ``trunc``, which it builds from sign, with it):
    spelled with comparisons instead, keeping NaN and signed zeros."""
    if x.dtype == torch.bool:
        return x.clone()
    if x.is_floating_point():
        return torch.where(x > 0.0, torch.ones_like(x), torch.where(x < 0.0, -torch.ones_like(x), x))
    return torch.where(x > 0, torch.ones_like(x), torch.where(x < 0, -torch.ones_like(x), torch.zeros_like(x)))


def _trunc(x):
    if not x.is_floating_point():
        return x.clone()
    return torch.where(x >= 0.0, torch.floor(x), torch.ceil(x))


def _angle(x):
    """Argument of a real number: pi for negatives, 0 otherwise, NaN kept."""
    if x.is_complex():
        return NotImplemented
    dt = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    xf = aten._to_copy.default(x, dtype=dt) if x.dtype != dt else x
    pi = aten.mul.Tensor(aten.ones_like.default(xf), math.pi)
    out = aten.where.self(aten.lt.Scalar(xf, 0), pi, aten.zeros_like.default(xf))
    return aten.where.self(aten.isnan.default(xf), xf, out)
