"""Arithmetic rewrites: Python-style remainder, Scalar forms as Tensor forms, broadcasting binary ops."""

from __future__ import annotations

from collections.abc import Callable

import torch

aten = torch.ops.aten


def _remainder(a, b):
    """Python-style remainder (sign of the divisor) from C-style ``fmod``; torch-mlir's own lowering of
    ``remainder`` takes the sign of the dividend for negative operands."""
    r = aten.fmod.Tensor(a, b) if isinstance(b, torch.Tensor) else aten.fmod.Scalar(a, b)
    if isinstance(b, torch.Tensor):
        sign_differs = torch.logical_xor(r < 0, b < 0)
    else:
        sign_differs = (r > 0) if b < 0 else (r < 0)
    fix = torch.logical_and(r != 0, sign_differs)
    return torch.where(fix, r + b, r)


def _scalar_as_tensor(tensor_op: torch._ops.OpOverload) -> Callable:
    """``op.Scalar(x, 3)`` → ``op.Tensor(x, tensor(3))``: torch-mlir lowers the Tensor forms of the bitwise ops,
    shifts and ``fmod`` but not their Scalar forms (inside graphs; single ops pass scalars as tensors anyway)."""

    def rewrite(a, b):
        dtype = torch.result_type(a, b)
        return tensor_op(a.to(dtype), torch.full((), b, dtype=dtype, device=a.device))

    return rewrite


def _broadcasting(op: torch._ops.OpOverload) -> Callable:
    """torch-mlir lowers some binary ops without broadcasting their operands; broadcast first."""
    def decomp(a, b):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape != b.shape:
            a, b = (aten.expand.default(t, list(torch.broadcast_shapes(a.shape, b.shape))) for t in (a, b))
            return op(a, b)
        return NotImplemented
    return decomp
