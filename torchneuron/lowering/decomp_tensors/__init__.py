"""Neuron decompositions of tensor plumbing: allocation (``empty`` as zeros), views and their ``_copy`` forms,
slices torch-mlir mis-sizes, ``prims`` mapped back to ATen, and 0-d reductions on 1-element views.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .allocation import (_new_uninitialized_strided, _prims_uninitialized_strided, _uninitialized, _uninitialized_like,
                         _uninitialized_permuted, _uninitialized_strided)
from .prims import _BINARY, _UNARY, _prims_table
from .views import _copy_ops, _slice, _slice_scatter, _view_any_strides
from .zero_d import wrap_zero_d

aten = torch.ops.aten

__all__ = ["BINARY", "UNARY", "prims_rows", "table", "view_any_strides", "wrap_zero_d"]

BINARY, UNARY = _BINARY, _UNARY  # the prims the on-demand decompositions map back (decompositions.py)
prims_rows = _prims_table
view_any_strides = _view_any_strides


def table() -> dict[torch._ops.OperatorBase, Callable]:
    t: dict = {
        aten.empty.memory_format: _uninitialized,
        aten.empty_strided.default: _uninitialized_strided,
        torch.ops.prims.empty_strided.default: _prims_uninitialized_strided,
        aten.empty_like.default: _uninitialized_like,
        aten.new_empty_strided.default: _new_uninitialized_strided,
        aten.empty_permuted.default: _uninitialized_permuted,
        aten.slice.Tensor: _slice,
        aten.slice_scatter.default: _slice_scatter,
    }
    t.update(_copy_ops())
    return t
