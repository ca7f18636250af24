"""Deferred PSUM accumulation groups.

A K-tiled matmul issues one `nc_matmul` per 128-row slice of K into the same PSUM tile. Summing those
products one BLAS call at a time is dominated by call overhead, so consecutive accumulating matmuls into
the *same* PSUM view are kept as their (already fp32) operands and summed in one call the first time
anything touches that PSUM storage. Operands are snapshotted when the instruction executes, so later
writes to the SBUF inputs cannot leak in; results are the fp32 sum of fp32 products either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .tensor import NkiTensor


@dataclass
class PendingMatmul:
    # the destination view as (offset, shape, strides, pdim): holding the view itself would make a
    # storage -> group -> view -> storage cycle and keep dead PSUM tiles charged until a GC pass
    key: tuple[Any, ...]
    accumulate: bool | None          # the first instruction's mode; later ones always add
    stationary: list[np.ndarray] = field(default_factory=list)
    moving: list[np.ndarray] = field(default_factory=list)


def view_key(t: NkiTensor) -> tuple[Any, ...]:
    return (t.offset, t.shape, t.strides, t.pdim)


def flush(storage: Any) -> None:
    """Materialise the pending group of `storage` into PSUM."""
    from .. import dtypes

    group: PendingMatmul | None = storage.pending
    if group is None:
        return
    storage.pending = None
    a = group.stationary[0] if len(group.stationary) == 1 else np.concatenate(group.stationary, axis=0)
    b = group.moving[0] if len(group.moving) == 1 else np.concatenate(group.moving, axis=0)
    from .tensor import NkiTensor

    offset, shape, strides, pdim = group.key
    dst = NkiTensor(storage, shape, strides, offset, pdim)
    result = shape_result(dst, product(a, b))
    if group.accumulate is True:
        result = dtypes.to_compute(dst.read()) + result
    elif group.accumulate is None:
        fresh = dst.psum_fresh_values()
        if not fresh.all():
            result = np.where(fresh, result, dtypes.to_compute(dst.read()) + result)
    dst.write(dtypes.cast(result, dst.dtype))


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a.T @ b. Computed as (b.T @ a).T: OpenBLAS is several times faster with the wide operand on the
    left for these tall-K, narrow-M shapes (measured: [2048,128].T @ [2048,512] 48 ms vs 7 ms)."""
    return (b.T @ a).T


def shape_result(dst: NkiTensor, product: np.ndarray) -> np.ndarray:
    """[M, N] product laid out as the destination view (partition dim first, free dims flattened)."""
    if dst.pdim in (0, None):
        return product.reshape(dst.shape)
    free = tuple(s for i, s in enumerate(dst.shape) if i != dst.pdim)
    return np.moveaxis(product.reshape((product.shape[0],) + free), 0, dst.pdim)
