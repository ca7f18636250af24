"""`neuronxcc.nki.language` (legacy NKI 0.1): the shared functions plus affine indexing, masks, block dims
and SPMD grid markers."""

from __future__ import annotations

from typing import Any

from ..core.indexing import IndexArray, Mask, arange, mgrid, par_dim  # noqa: F401
from ..kernel import nc, spmd_dim  # noqa: F401
from ..lang_common import *  # noqa: F403
from ..lang_common import __all__ as _common
from ..ops import elementwise as _ew


def static_cast(arr: Any, dtype: Any, **kwargs: Any) -> Any:
    """Cast a tile to `dtype` (round to nearest even, saturating for integers)."""
    return _ew.copy_as(arr, dtype)


def loop_reduce(x: Any, op: Any, loop_indices: Any, **kwargs: Any) -> Any:
    """Legacy hint that `x` is reduced across loop iterations; eager execution already did the reduction."""
    return x


__all__ = [*_common, "arange", "mgrid", "par_dim", "nc", "spmd_dim", "static_cast", "loop_reduce"]
