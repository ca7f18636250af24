"""``prims`` ops mapped back to the ATen ops torch-mlir lowers (PyTorch's reference decompositions, used on
demand, bottom out in prims, which torch-mlir does not import)."""

from __future__ import annotations

import torch

aten = torch.ops.aten


_BINARY = ("add", "sub", "mul", "div", "ne", "eq", "lt", "le", "gt", "ge", "maximum", "minimum",
           "bitwise_and", "bitwise_or", "bitwise_xor")


_UNARY = ("abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "floor", "ceil", "sign",
          "bitwise_not", "log1p", "expm1", "erf")


def _broadcast_in_dim(a, shape, broadcast_dimensions):
    sizes = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        sizes[d] = a.shape[i]
    return aten.expand.default(aten.reshape.default(a, sizes), list(shape))


def _prims_table() -> list[tuple]:
    """PyTorch's reference decompositions (used on demand) bottom out in ``prims`` ops, which torch-mlir
    does not import; these map the common ones back to ATen ops it lowers. (prim, ATen op it maps to, fn)."""
    prims = torch.ops.prims
    rows: list[tuple] = [
        (prims.broadcast_in_dim.default, aten.expand.default, _broadcast_in_dim),
        (prims.clone.default, aten.clone.default, lambda a, *, memory_format=None: aten.clone.default(a)),
        (prims.hypot.default, aten.sqrt.default,
         lambda a, b: aten.sqrt.default(aten.add.Tensor(aten.mul.Tensor(a, a), aten.mul.Tensor(b, b)))),
        (prims.fmax.default, aten.fmax.default, lambda a, b: aten.fmax.default(a, b)),
        (prims.fmin.default, aten.fmin.default, lambda a, b: aten.fmin.default(a, b)),
        (prims.where.default, aten.where.self, lambda pred, a, b: aten.where.self(pred, a, b)),
    ]
    for name in _BINARY:
        ov = getattr(getattr(aten, name), "Tensor", None) or getattr(aten, name).default
        rows.append((getattr(prims, name).default, ov, (lambda ov: lambda a, b: ov(a, b))(ov)))
    for name in _UNARY:
        ov = getattr(aten, name).default
        rows.append((getattr(prims, name).default, ov, (lambda ov: lambda a: ov(a))(ov)))
    return rows
