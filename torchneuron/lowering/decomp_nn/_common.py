"""Helpers shared by the nn.functional decompositions: static-shape constructors, the accumulation-dtype
casts and indexing along a dim (helpers other families use too are in ``lowering/decomp_common.py``)."""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """Accumulation dtype: CPU kernels accumulate half/bfloat16 in float."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _cast(x, dtype):
    return x if x.dtype == dtype else aten._to_copy.default(x, dtype=dtype)


def _select_along(x, dim: int, idx):
    """``x`` indexed along ``dim`` by an integer tensor ``idx`` of any shape: the dim is replaced by idx's
    dims (``index_select`` on the flattened index, then a reshape)."""
    flat = aten.index_select.default(x, dim, aten.reshape.default(idx, [-1]))
    shape = list(x.shape)
    return aten.reshape.default(flat, shape[:dim] + list(idx.shape) + shape[dim + 1:])


def _size_at(x, dim: int, n: int) -> list[int]:
    shape = list(x.shape)
    shape[dim] = n
    return shape
