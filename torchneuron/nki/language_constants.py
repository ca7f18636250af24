"""`nki.language.constants` (both API generations): the helpers AWS's kernels import from it.

AWS's neuron-team kernels (transpose, conv, RMSNorm-quant) size their tiles with
`from neuronxcc.nki.language.constants import sizeinbytes`.
"""

from __future__ import annotations

from typing import Any

from . import dtypes as _dt


def sizeinbytes(dtype: Any) -> int:
    """Bytes one element of `dtype` takes in memory (a packed x4 type: the whole pack)."""
    return _dt.itemsize(_dt.as_dtype(dtype))


__all__ = ["sizeinbytes"]
