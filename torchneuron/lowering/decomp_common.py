"""Helpers shared by more than one decomposition family (each family's own live in its ``_common.py``).

Every decomposition is traced with fake tensors into ATen ops torch-mlir lowers, so these build tensors from
static sizes only.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def zeros(shape, dtype=None, device=None) -> torch.Tensor:
    """A zero tensor from a broadcast scalar: lowers for any shape (zero-size ones included), where
    torch-mlir's ``tensor.empty`` cannot be exported to XLA."""
    zero = aten.scalar_tensor.default(0, dtype=dtype if dtype is not None else torch.get_default_dtype(),
                                      device=device)
    return aten.clone.default(aten.expand.default(zero, list(shape)))


def arange(n: int, device=None) -> torch.Tensor:
    """``[0, n)`` as int64: the index ramp the gather/scatter-style decompositions build from static sizes."""
    return aten.arange.start_step(0, n, 1, dtype=torch.int64, device=device)


def polevl(x: torch.Tensor, coeffs) -> torch.Tensor:
    """Cephes ``polevl``: Horner evaluation of sum(coeffs[i] * x**(n-1-i)), highest degree first, unrolled so
    a coefficient table becomes a static elementwise graph. The first step multiplies by the scalar instead of
    filling a tensor with ``coeffs[0]`` (one op fewer; the same bits in float32 and float64, where every caller
    computes, half-precision inputs being cast up first)."""
    acc = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        acc = acc * x + c
    return acc


def int_list(v, n: int) -> list[int]:
    """An ``int[n]`` argument as a list of n ints (ATen accepts one value for all dims)."""
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def pool_out(length: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling output size along one dim (ceil mode included)."""
    out = (length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= length + p:
        out -= 1
    return out
