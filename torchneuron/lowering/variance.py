"""var / std / var_mean / std_mean (and so layer_norm, group_norm, batch_norm) without float64.

torch-mlir's own lowering of these reductions accumulates in float64; NeuronCores have no float64 arithmetic,
so a Neuron program must not contain it. Here they are the two-pass algorithm in the input's computation
dtype (float32 for float32/bfloat16/float16): the mean, then the mean of squared deviations from it. Two-pass
is accurate without a wider accumulator (no cancellation of E[x²] - E[x]²). Complex and integer inputs keep
the default path.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

aten = torch.ops.aten
_LOW = (torch.float16, torch.bfloat16)


def _dims(x: torch.Tensor, dim) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % max(x.dim(), 1) for d in dims]


def _moments(x: torch.Tensor, dim, correction, keepdim: bool):
    """(var, mean) in the computation dtype, or None where the default lowering applies."""
    if not x.dtype.is_floating_point or x.dim() == 0:
        return None
    dims = _dims(x, dim)
    xc = x.to(torch.float32) if x.dtype in _LOW else x
    n = math.prod(x.shape[d] for d in dims)
    c = 1.0 if correction is None else float(correction)
    mean = aten.mean.dim(xc, dims, True)
    diff = aten.sub.Tensor(xc, mean)
    var = aten.div.Scalar(aten.sum.dim_IntList(aten.mul.Tensor(diff, diff), dims, keepdim), max(n - c, 0.0))
    if not keepdim:
        mean = aten.squeeze.dims(mean, dims)
    return var, mean


def _var(x, dim=None, *, correction=None, keepdim=False):
    m = _moments(x, dim, correction, keepdim)
    return NotImplemented if m is None else m[0].to(x.dtype)


def _std(x, dim=None, *, correction=None, keepdim=False):
    m = _moments(x, dim, correction, keepdim)
    return NotImplemented if m is None else aten.sqrt.default(m[0]).to(x.dtype)


def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    m = _moments(x, dim, correction, keepdim)
    return NotImplemented if m is None else (m[0].to(x.dtype), m[1].to(x.dtype))


def _std_mean(x, dim=None, *, correction=None, keepdim=False):
    m = _moments(x, dim, correction, keepdim)
    return NotImplemented if m is None else (aten.sqrt.default(m[0]).to(x.dtype), m[1].to(x.dtype))


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {aten.var.correction: _var, aten.std.correction: _std, aten.var_mean.correction: _var_mean,
            aten.std_mean.correction: _std_mean}
