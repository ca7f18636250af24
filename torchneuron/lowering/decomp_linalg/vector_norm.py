"""``linalg_vector_norm`` over every dimension, spelled so torch-mlir lowers it."""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``dim=None`` / ``dim=[]`` (every dimension) spelled out as the explicit list of dims: torch-mlir's
    lowering of the empty-list form leaves a rank-1 -> rank-0 cast unresolved (seen on 0-d inputs, which
    the 0-d wrapper reshapes to one element)."""
    if x.dim() == 0 or (dim is not None and len(dim) > 0):
        return NotImplemented
    return aten.linalg_vector_norm.default(x, ord, list(range(x.dim())), keepdim, dtype=dtype)
