"""Deferred PSUM accumulation groups.

A K-tiled matmul issues one `nc_matmul` per 128-row slice of K into the same PSUM tile. Summing those
products one BLAS call at a time is dominated by call overhead, so consecutive accumulating matmuls into
the *same* PSUM view are kept as their (already fp32) operands and summed in one call the first time
anything touches that PSUM storage (`Storage.flush`). Operands are snapshotted when the instruction
executes, so later writes to the SBUF inputs cannot leak in; results are the fp32 sum of fp32 products
either way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import blas
from ..core.tensor import NkiTensor


class PendingMatmul:
    """Operands of consecutive matmuls into one PSUM view, not yet summed. The view is kept as its key,
    not as a tensor, so the storage -> group link makes no reference cycle."""

    __slots__ = ("key", "accumulate", "stationary", "moving")

    def __init__(self, key: tuple[Any, ...], accumulate: bool | None) -> None:
        self.key = key
        self.accumulate = accumulate  # the first instruction's mode; later ones always add
        self.stationary: list[np.ndarray] = []
        self.moving: list[np.ndarray] = []

    def flush(self, storage: Any) -> None:
        a = self.stationary[0] if len(self.stationary) == 1 else np.concatenate(self.stationary, axis=0)
        b = self.moving[0] if len(self.moving) == 1 else np.concatenate(self.moving, axis=0)
        offset, shape, strides, pdim = self.key
        dst = NkiTensor(storage, shape, strides, offset, pdim)
        accumulate_into(dst, shape_result(dst, product(a, b)), self.accumulate)


def accumulate_into(dst: NkiTensor, result: np.ndarray, accumulate: bool | None, mask: Any = None) -> None:
    """Write a matmul result into PSUM: add (True), overwrite (False), or, for `None`, overwrite the
    elements that start an accumulation group and add to the others."""
    if accumulate is True:
        result = dst.read_compute() + result
    elif accumulate is None:
        fresh = dst.psum_fresh_values()
        if not fresh.all():
            result = np.where(fresh, result, dst.read_compute() + result)
    dst.write(dtypes.cast(result, dst.dtype), mask)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a.T @ b. Computed as (b.T @ a).T: OpenBLAS is several times faster with the wide operand on the
    left for these tall-K, narrow-M shapes (measured: [2048,128].T @ [2048,512] 48 ms vs 7 ms)."""
    with blas.threads_for(a.shape[0] * a.shape[1] * b.shape[1]):
        return (b.T @ a).T


def shape_result(dst: NkiTensor, product: np.ndarray) -> np.ndarray:
    """[M, N] product laid out as the destination view (partition dim first, free dims flattened)."""
    if dst.pdim in (0, None):
        return product.reshape(dst.shape)
    free = tuple(s for i, s in enumerate(dst.shape) if i != dst.pdim)
    return np.moveaxis(product.reshape((product.shape[0],) + free), 0, dst.pdim)
