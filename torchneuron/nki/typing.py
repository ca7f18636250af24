"""`nki.typing`: tensor annotations (`nt.tensor[128, 512]`, `nt.tensor[[8192, 4096], nl.bfloat16]`).

The simulator checks an annotated argument's shape (`err_annotation_shape_mismatch`); `benchmark` accepts
an annotation in place of an array (its values are ignored there, as by neuron-bench).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes


class TensorType:
    def __init__(self, shape: tuple[int, ...] | None, dtype: np.dtype | None, buffer: Any = None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.buffer = buffer

    def placeholder(self) -> np.ndarray:
        if self.shape is None:
            raise TypeError("an nt.tensor annotation without a shape cannot stand in for an argument")
        return np.zeros(self.shape, dtype=dtypes.storage_dtype(self.dtype or dtypes.float32))

    def __repr__(self) -> str:
        return f"nt.tensor[{list(self.shape) if self.shape else '...'}, {self.dtype}]"


class _TensorAnnotation:
    def __getitem__(self, spec: Any) -> TensorType:
        if isinstance(spec, tuple) and spec and isinstance(spec[0], (list, tuple)):
            shape = tuple(int(s) for s in spec[0])
            dt = dtypes.as_dtype(spec[1]) if len(spec) > 1 else None
            return TensorType(shape, dt)
        if isinstance(spec, (list, tuple)):
            return TensorType(tuple(int(s) for s in spec), None)
        return TensorType((int(spec),), None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


tensor = _TensorAnnotation()
mutable_tensor = tensor


def scalar(value: Any) -> float:
    """`nt.scalar(x)`: a Python number, or the value of a one-element on-chip tile read while the kernel runs
    (a legacy dynamic loop, `while scalar(cond):`, as AWS's paged-attention kernel writes it)."""
    if hasattr(value, "storage") and hasattr(value, "read"):
        from .core import data_dependence
        from .errors import ERR_SHAPE, fail

        if value.size != 1:
            raise fail(ERR_SHAPE, f"scalar() of tensor `{value.name}` {value.shape}: a scalar is one element.",
                       "pass a [1, 1] tile (or index one element: t[0, 0]).")
        data_dependence.mark()  # the loop's trip count comes from data
        return float(np.asarray(value.read(), dtype=np.float64).reshape(()))
    return float(value)
