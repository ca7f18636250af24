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

    def __init__(self, key: tuple[Any, ...], accumulate: Any) -> None:
        self.key = key
        self.accumulate = accumulate  # the first instruction's mode (True/False/None/"written"); later ones add
        self.stationary: list[np.ndarray] = []
        self.moving: list[np.ndarray] = []

    def flush(self, storage: Any) -> None:
        offset, shape, strides, pdim = self.key
        dst = NkiTensor(storage, shape, strides, offset, pdim)
        accumulate_into(dst, shape_result(dst, summed_products(self.stationary, self.moving)), self.accumulate)


def merge_into(target: NkiTensor, product: NkiTensor) -> bool:
    """`target += product` where `product` is a fresh matmul result not yet computed (legacy
    `psum += nisa.nc_matmul(...)`): the hardware accumulates the matmul into `target` directly, so its
    operands join `target`'s accumulation group instead of being summed one product at a time. Elements
    of `target` never written start the group. Returns False when the shapes of the case do not fit (the
    caller then adds eagerly); `product` keeps its own group in case it is read later."""
    group = product.storage.pending
    if group is None or group.accumulate is not False or len(group.stationary) != 1 or target.index is not None \
            or product.storage.result_mask is not None or group.key != product.key() or target.shape != product.shape:
        return False
    st = target.storage
    mine = st.pending
    if mine is not None and mine.key != target.key():
        st.flush()
        mine = None
    if mine is None:
        mine = PendingMatmul(target.key(), "written")
    mine.stationary.append(group.stationary[0])
    mine.moving.append(group.moving[0])
    st.pending = mine
    return True


def accumulate_into(dst: NkiTensor, result: np.ndarray, accumulate: Any, mask: Any = None) -> None:
    """Write a matmul result into PSUM: add (True), overwrite (False), or, for `None` (and "written", legacy
    `+=`), overwrite the elements never written since the tile was allocated (they start the accumulation
    group) and add to the others. Reading the tile does not end the group, as in AWS's `nki.simulate`: a
    kernel may copy the running sum out between the K tiles."""
    st = dst.storage
    if st.pending is not None:  # another view's deferred group: its writes decide what is fresh here
        st.flush()
    if accumulate is True:
        result = dst.read_compute() + result
    elif accumulate is None or accumulate == "written":
        started = dst.written_values()
        count = np.count_nonzero(started)  # all() / any() of a bool array, without NumPy's Python wrappers
        if count == started.size:
            result = dst.read_compute() + result
        elif count:
            result = np.where(started, dst.read_compute() + result, result)
    dst.write(dtypes.cast(result, dst.dtype), mask)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a.T @ b in fp32 (one instruction's product)."""
    with blas.single_thread():
        return np.matmul(a.T, b)


def summed_products(stationary: list[np.ndarray], moving: list[np.ndarray]) -> np.ndarray:
    """sum_i a_i.T @ b_i: one BLAS call per instruction, accumulated in place. Measured against
    concatenating the operands into one tall-K product: 3.1 ms vs 4.4 ms for eight 128x128x512 products
    (the concatenation copies every operand)."""
    macs = sum(a.size for a in stationary) * moving[0].shape[1]
    with blas.single_thread(macs):
        out = np.matmul(stationary[0].T, moving[0])
        if len(stationary) > 1:
            tmp = np.empty_like(out)
            for a, b in zip(stationary[1:], moving[1:]):
                np.matmul(a.T, b, out=tmp)
                out += tmp
        return out


def shape_result(dst: NkiTensor, product: np.ndarray) -> np.ndarray:
    """[M, N] product laid out as the destination view (partition dim first, free dims flattened)."""
    if dst.pdim in (0, None):
        return product.reshape(dst.shape)
    free = tuple(s for i, s in enumerate(dst.shape) if i != dst.pdim)
    return np.moveaxis(product.reshape((product.shape[0],) + free), 0, dst.pdim)
