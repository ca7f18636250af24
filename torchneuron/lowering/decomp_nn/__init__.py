"""Neuron decompositions: pooling, padding, convolution, BatchNorm's update forms and other nn.functional ops
torch-mlir has no StableHLO lowering for (or lowers wrongly), rewritten into ATen ops it does lower: slicing,
``index_select``/``gather`` with index tensors computed from static sizes, matmul, reductions, regular convolution.

Shared conventions: every decomposition is traced with fake tensors, so positions and weights derive from
static sizes only (``arange`` arithmetic, no data-dependent control flow); reduced-precision inputs are
computed in float32 where the CPU kernel accumulates in float, and cast back once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .batch_norm import _batch_norm_no_update, _batch_norm_with_update, _batch_norm_with_update_functional
from .bilinear import _trilinear
from .conv_transpose import _convolution
from .distances import _cdist, _pdist
from .embedding import _embedding_bag, _embedding_renorm
from .grid_sample import _grid_sampler
from .grouped_mm import _grouped_mm
from .losses import _linear_cross_entropy_ops
from .padding import _pad_nd
from .pooling import _adaptive_avg_pool, _adaptive_max_pool3d, _avg_pool3d, _fractional_max_pool, _max_pool3d
from .pooling2d import _avg_pool2d, _max_pool2d_backward, _max_pool2d_ceil
from .unfold import _im2col, _unfold_copy
from .upsample import _upsample_bilinear2d_aa

aten = torch.ops.aten


def table() -> dict[torch._ops.OperatorBase, Callable]:
    t: dict = {
        aten.max_pool2d_with_indices.default: _max_pool2d_ceil,
        aten.max_pool2d_with_indices_backward.default: _max_pool2d_backward,
        aten.avg_pool2d.default: _avg_pool2d,
        aten._cdist_forward.default: _cdist,
        aten._batch_norm_with_update.default: _batch_norm_with_update,
        aten._batch_norm_no_update.default: _batch_norm_no_update,
        aten._batch_norm_with_update_functional.default: _batch_norm_with_update_functional,
        aten.reflection_pad1d.default: _pad_nd("reflect"),
        aten.reflection_pad2d.default: _pad_nd("reflect"),
        aten.reflection_pad3d.default: _pad_nd("reflect"),
        aten.replication_pad1d.default: _pad_nd("replicate"),
        aten.replication_pad2d.default: _pad_nd("replicate"),
        aten.replication_pad3d.default: _pad_nd("replicate"),
        aten._adaptive_avg_pool2d.default: _adaptive_avg_pool(2, native=True),
        aten._adaptive_avg_pool3d.default: _adaptive_avg_pool(3, native=False),
        aten.avg_pool3d.default: _avg_pool3d,
        aten.max_pool3d_with_indices.default: _max_pool3d,
        aten.adaptive_max_pool3d.default: _adaptive_max_pool3d,
        aten.convolution.default: _convolution,
        aten.im2col.default: _im2col,
        aten.unfold_copy.default: _unfold_copy,
        aten.unfold.default: _unfold_copy,  # a value-semantic IR has no views: torch-mlir lowers only some unfolds
        aten._grouped_mm.default: _grouped_mm,
        aten._pdist_forward.default: _pdist,
        aten._trilinear.default: _trilinear,
        aten.fractional_max_pool2d.default: _fractional_max_pool(2),
        aten.fractional_max_pool3d.default: _fractional_max_pool(3),
        aten.embedding_renorm.default: _embedding_renorm,
        aten.grid_sampler_2d.default: _grid_sampler,
        aten.grid_sampler_3d.default: _grid_sampler,
        aten._upsample_bilinear2d_aa.default: _upsample_bilinear2d_aa,
        aten._embedding_bag.default: _embedding_bag(forward_only=False),
        aten._embedding_bag_forward_only.default: _embedding_bag(forward_only=True),
    }
    t.update(_linear_cross_entropy_ops())
    return t
