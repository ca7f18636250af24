"""`neuronxcc.nki.language` (legacy NKI 0.1): the shared functions plus affine indexing, masks, block dims
and SPMD grid markers."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..core import context as _ctx
from ..core.indexing import IndexArray, Mask, arange, mgrid, par_dim  # noqa: F401
from ..core.tensor import NkiTensor
from ..kernel import nc, spmd_dim  # noqa: F401
from ..language_shared import *  # noqa: F403
from ..language_shared import __all__ as _common
from ..instructions import elementwise as _ew
from ..instructions.loop_reduce import loop_reduce  # noqa: F401


def static_cast(arr: Any, dtype: Any) -> Any:
    """Cast to `dtype` as the engines do (round to nearest even; integers saturate). Inside a kernel it
    casts a tile (a copy instruction); outside, on a host array, it returns the cast NumPy array, which
    is how tests build inputs and golden outputs in the kernel's precision."""
    if isinstance(arr, NkiTensor) or _ctx.active() is not None:
        return _ew.copy_as(arr, dtype)
    values = np.asarray(arr)
    dt = _dt.as_dtype(dtype)
    if values.dtype.kind in "iub":
        return _dt.cast(values, dt)
    return _dt.cast(_dt.to_compute(values.astype(np.float32) if values.dtype == np.float64 else values), dt)


__all__ = [*_common, "arange", "mgrid", "par_dim", "nc", "spmd_dim", "static_cast", "loop_reduce"]

# `from nki.language.constants import sizeinbytes` (through the import aliases) imports a submodule of this
# module: the import system requires its parent to be a package
from .. import language_constants as constants  # noqa: E402, F401
__path__: list[str] = []
