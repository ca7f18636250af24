"""Neuron decompositions: indexing, scatter, scan and sorting-based ops torch-mlir has no StableHLO lowering for.

Everything here is rewritten into ops torch-mlir lowers: elementwise math, ``where``, ``sort``, ``gather`` /
``index_select``, ``cat`` / slices, ``cumsum``, ``scatter_add`` and ``scatter.src``. Shapes are static, so the
only loops are over static sizes (scan steps, dimensions), never over tensor values.

Building blocks:

- ``_scan``: an inclusive Hillis–Steele scan along a dim in ceil(log2 n) steps of "combine with the element d
  to the left" (cumprod, cummax/cummin and segmented reductions); O(n log n) work, O(n) memory, exact for
  associative combines (products round in tree order instead of left-to-right).
- ``_segment_reduce_flat``: a reduction of values grouped by integer keys (scatter_reduce / index_reduce with
  prod/amax/amin): sort by key (the order within a key does not matter: the ops commute), segmented scan,
  then each segment's last element is written with a scatter in which every target slot receives exactly one write
  (the others go to a dropped dummy slot), so
  XLA's unspecified order of duplicate scatter writes never matters.
- ``_binary_search``: a vectorised lower/upper bound, ceil(log2(n+1)) gather steps, the same predicate as
  PyTorch's kernel (so NaN queries land where PyTorch puts them).
- ``_stable_sort_last``: a stable, NaN-last sort from two sorts torch-mlir lowers (its own is unstable and
  mishandles NaN), for ``sort(stable=True)``, mode, median, kthvalue and nanmedian, whose indices depend on
  the order of ties.

Costs are O(n log n) or O(n * log bins) in time and O(n) in memory; nothing builds an n x m one-hot.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .hash_tensor import _hash_tensor
from .histogram import (_histc, _histogram_bin_ct, _histogram_bins_tensor, _histogramdd_bin_edges,
                        _histogramdd_from_bin_cts, _histogramdd_from_bin_tensors)
from .nonzero import _nonzero_static
from .scans import _cum_extreme, _cumprod, _logcumsumexp
from .scatter import _index_reduce, _scatter_legacy_reduce, _scatter_reduce, _scatter_value_reduce
from .scatter_views import _as_strided_scatter, _diagonal_scatter
from .search import _searchsorted, _searchsorted_scalar
from .segment_reduce import _segment_reduce
from .slicing import _narrow_copy, _roll
from .sorting import _kthvalue, _median, _median_dim, _mode, _nanmedian, _nanmedian_dim, _stable_sort_ascending
from .take_put import _index_put_mask, _put, _take

aten = torch.ops.aten


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten.sort.stable: _stable_sort_ascending,
        aten.kthvalue.default: _kthvalue,
        aten.median.dim: _median_dim,
        aten.median.default: _median,
        aten.logcumsumexp.default: _logcumsumexp,
        aten.cumprod.default: _cumprod,
        aten.cummax.default: _cum_extreme(torch.ge),
        aten.cummin.default: _cum_extreme(torch.le),
        aten.scatter_reduce.two: _scatter_reduce,
        aten.scatter.reduce: _scatter_legacy_reduce,
        aten.scatter.value_reduce: _scatter_value_reduce,
        aten.index_reduce.default: _index_reduce,
        aten.put.default: _put,
        aten.take.default: _take,
        aten.index_put.default: _index_put_mask,
        aten.searchsorted.Tensor: _searchsorted,
        aten.searchsorted.Scalar: _searchsorted_scalar,
        aten.roll.default: _roll,
        aten.narrow_copy.default: _narrow_copy,
        aten.nonzero_static.default: _nonzero_static,
        aten.mode.default: _mode,
        aten.nanmedian.dim: _nanmedian_dim,
        aten.nanmedian.default: _nanmedian,
        aten.diagonal_scatter.default: _diagonal_scatter,
        aten.as_strided_scatter.default: _as_strided_scatter,
        aten.histc.default: _histc,
        aten.histogram.bin_ct: _histogram_bin_ct,
        aten.histogram.bins_tensor: _histogram_bins_tensor,
        aten._histogramdd_bin_edges.default: _histogramdd_bin_edges,
        aten._histogramdd_from_bin_cts.default: _histogramdd_from_bin_cts,
        aten._histogramdd_from_bin_tensors.default: _histogramdd_from_bin_tensors,
        aten.segment_reduce.default: _segment_reduce,
        aten.hash_tensor.default: _hash_tensor,
    }
