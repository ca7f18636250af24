"""Operand rules every instruction shares: where operands may live, partition limits, masks, fp32 reads,
cast-on-write, and allocating the tiles legacy calls return."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import dtypes
from ..core import context
from ..core.buffers import PSUM, SBUF, SHARED_HBM, Buffer, Storage, charge
from ..core.indexing import Mask, split_shape
from ..core.tensor import NkiTensor
from ..errors import (
    ERR_LEADING_PARTITION,
    ERR_MAX_DIMS,
    ERR_MEMORY,
    ERR_PARTITION_MISMATCH,
    ERR_PARTITIONS,
    ERR_SHAPE,
    ERR_SHARED_HBM_LEVEL,
    ERR_START_PARTITION,
    fail,
    kernel_frame,
)

Operand = Any  # NkiTensor | Python/NumPy scalar


def mask_array(mask: Any) -> np.ndarray | None:
    if mask is None:
        return None
    if isinstance(mask, Mask):
        return mask.values
    if isinstance(mask, (bool, np.bool_)):
        return np.asarray(mask)
    if isinstance(mask, NkiTensor):
        return mask.read().astype(np.bool_)
    return np.asarray(mask, dtype=np.bool_)


def mask_for(mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """The part of an output-space mask that applies to an operand of `shape` (broadcast operands see
    the mask reduced over their broadcast dims)."""
    if mask is None:
        return None
    try:
        np.broadcast_shapes(mask.shape, shape)
        if len(mask.shape) <= len(shape) and all(m in (1, s) for m, s in zip(mask.shape[::-1], shape[::-1])):
            return mask
    except ValueError:
        pass
    if mask.ndim != len(shape):
        return None
    m = mask
    for d, s in enumerate(shape):
        if s == 1 and m.shape[d] > 1:
            m = m.any(axis=d, keepdims=True)
    return m


def check_on_chip(t: Operand, api: str, arg: str) -> None:
    if isinstance(t, NkiTensor) and not t.buffer.on_chip:
        raise fail(ERR_MEMORY, f"Expected operand '{arg}' of '{api}' to be in address space 'sbuf' or 'psum', "
                   f"but got a tile in '{t.buffer.name}'.", f"load `{t.name}` into SBUF first (nl.load / "
                   "nisa.dma_copy), then compute on the SBUF tile.")


def check_buffer(t: NkiTensor, api: str, arg: str, allowed: tuple[Buffer, ...]) -> None:
    if t.buffer not in allowed and not (t.buffer.is_hbm and any(b.is_hbm for b in allowed)):
        want = " or ".join(f"'{b.name}'" for b in allowed)
        raise fail(ERR_MEMORY, f"Expected operand '{arg}' of '{api}' to be in address space {want}, but got a "
                   f"tile in '{t.buffer.name}'.", f"move `{t.name}` to {want} first.")


def check_partitions(t: Operand, api: str, arg: str, limit: int | None = None) -> None:
    """Partition count, contiguity and the start-partition quadrant rule for engine operands."""
    if not isinstance(t, NkiTensor) or not t.buffer.on_chip:
        return
    pmax = limit or context.current().target.pmax
    if t.ndim > 5:
        raise fail(ERR_MAX_DIMS, f"operand '{arg}' of '{api}' has {t.ndim} dimensions; engines access at most a "
                   "partition dim plus 4 free dims.", "flatten free dimensions (reshape) first.")
    p = t.partitions
    if p > pmax:
        raise fail(ERR_PARTITIONS, f"number of partitions {p} exceed architecture limitation of {pmax} "
                   f"(operand '{arg}' of '{api}').", f"tile the partition dimension in chunks of {pmax}.")
    st = t.storage
    if t.index is not None or t.pdim is None or p <= 1:
        return
    pstride = t.strides[t.pdim]  # type: ignore[index]
    if pstride == 0:  # a partition broadcast (`broadcast_to`): the compiler replicates the row
        return
    if pstride != st.partition_stride and st.partition_stride != 0:
        raise fail(ERR_LEADING_PARTITION, f"operand '{arg}' of '{api}' does not occupy contiguous partitions "
                   f"(partition step {pstride // max(st.partition_stride, 1)}).",
                   "make the first index of the tile step through consecutive partitions.")
    start = int(st.partition_of(t.offset))
    allowed = (0,) if p > 64 else (0, 64) if p > 32 else (0, 32, 64, 96)
    if start not in allowed:
        raise fail(ERR_START_PARTITION, f"operand '{arg}' of '{api}' spans {p} partitions starting at partition "
                   f"{start}; {p} partitions may only start at {allowed}.",
                   "align the tile's first partition (32-partition quadrants), or copy it to partition 0.")


def read(t: Operand, mask: np.ndarray | None = None) -> Any:
    """An operand as the engines see it: fp32 array (or a scalar)."""
    if isinstance(t, NkiTensor):
        if t.buffer == PSUM:
            t.psum_mark(True)
        return dtypes.to_compute(t.read(mask_for(mask, t.shape)))
    if isinstance(t, (np.ndarray, np.generic)):
        return np.asarray(t, dtype=np.float32)
    return np.float32(t)


def read_raw(t: Operand, mask: np.ndarray | None = None) -> Any:
    """An operand's stored values (for bit-exact copies and integer ops)."""
    if isinstance(t, NkiTensor):
        return t.read(mask_for(mask, t.shape))
    return np.asarray(t)


def write(dst: NkiTensor, values: Any, mask: np.ndarray | None = None, api: str = "") -> None:
    values = np.asarray(values)
    try:
        np.broadcast_shapes(values.shape, dst.shape)
    except ValueError:
        raise fail(ERR_SHAPE, f"'{api}' produces shape {values.shape} but its destination `{dst.name}` has shape "
                   f"{dst.shape}.", "make the destination tile the shape of the result.") from None
    if values.shape != dst.shape and values.size > dst.size:
        raise fail(ERR_SHAPE, f"'{api}' produces shape {values.shape}, larger than destination `{dst.name}` "
                   f"{dst.shape}.", "make the destination tile the shape of the result.")
    dst.write(dtypes.cast(values, dst.dtype), mask_for(mask, dst.shape))


def storages(*ts: Any) -> list[Storage]:
    return [t.storage for t in ts if isinstance(t, NkiTensor)]


def broadcast_shape(api: str, *operands: Operand) -> tuple[int, ...]:
    shapes = [t.shape for t in operands if isinstance(t, NkiTensor)]
    if not shapes:
        return ()
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        parts = {s[0] for s in shapes if s}
        code = ERR_PARTITION_MISMATCH if len(parts - {1}) > 1 else ERR_SHAPE
        raise fail(code, f"operands of '{api}' have incompatible shapes {shapes}.",
                   "give operands the same partition count; free dims must match or be 1.") from None


def allocate(shape: Any, dtype: Any, buffer: Buffer = SBUF, name: str = "") -> NkiTensor:
    """A new tensor in `buffer`, charged to the kernel's on-chip capacity and filled with the sentinel."""
    run = context.current()
    plain, paxis = split_shape(shape)
    dt = dtypes.as_dtype(dtype)
    if buffer.on_chip:
        if not plain:
            raise fail(ERR_SHAPE, f"on-chip tensor {name!r} needs at least one dimension.", "give it a shape.")
        if plain[paxis] > run.target.pmax:
            raise fail(ERR_PARTITIONS, f"number of partitions {plain[paxis]} exceed architecture limitation of "
                       f"{run.target.pmax} (allocating {name or 'a tile'} of shape {plain}).",
                       f"split the leading dimension into tiles of {run.target.pmax} partitions.")
    if buffer == SHARED_HBM:
        return _shared(run, plain, dt, name)
    st = Storage(plain, dt, buffer, name, paxis, track_writes=buffer.is_hbm)
    charge(run, st)
    return NkiTensor.whole(st)


_SHARED_LOCK = threading.Lock()  # LNC programs allocate shared tensors from two threads


def _shared(run: context.KernelRun, shape: tuple[int, ...], dt: np.dtype, name: str) -> NkiTensor:
    frame = kernel_frame()
    if run.kernel_code is not None and frame is not None and frame.f_code is not run.kernel_code:
        raise fail(ERR_SHARED_HBM_LEVEL, f"shared_hbm tensor {name or ''!r} is allocated in `{frame.f_code.co_name}`, "
                   "not in the kernel function itself.", "allocate kernel outputs in the @nki.jit function's body "
                   "and pass them to helpers.")
    with _SHARED_LOCK:
        return _shared_locked(run, shape, dt, name)


def _shared_locked(run: context.KernelRun, shape: tuple[int, ...], dt: np.dtype, name: str) -> NkiTensor:
    i = run.shared_next
    run.shared_next += 1
    if i < len(run.shared):
        st = run.shared[i]
        if st.shape != shape or st.dtype != dt:
            raise fail(ERR_SHAPE, f"shared_hbm tensor {name or st.name!r} is allocated as {shape} "
                       f"{dtypes.name(dt)} by program {run.program_ids} but as {st.shape} {dtypes.name(st.dtype)} by "
                       "program 0.", "allocate kernel outputs with the same shape in every program of the grid.")
        return NkiTensor.whole(st)
    st = Storage(shape, dt, SHARED_HBM, name, 0, track_writes=True)
    run.shared.append(st)
    return NkiTensor.whole(st)


def assign(view: NkiTensor, value: Any, mask: np.ndarray | None = None) -> None:
    """`tile[...] = value`: the value lands in the tile (the compiler writes results in place, no cost)."""
    run = context.current()
    source = value.buffer.name if isinstance(value, NkiTensor) else "a constant"
    if view.buffer.is_hbm or (isinstance(value, NkiTensor) and value.buffer.is_hbm):
        raise fail(ERR_MEMORY, f"assigning {source} to `{view.name}` in '{view.buffer.name}' moves data between HBM "
                   "and the chip: that is a DMA, not an assignment.", "use nl.load / nl.store / nisa.dma_copy.")
    if isinstance(value, NkiTensor):
        vals = value.read(mask_for(mask, value.shape))
        if value.buffer == PSUM:
            value.psum_mark(True)
        src = [value.storage]
    else:
        vals = np.asarray(value)
        vals = vals.astype(np.float32) if vals.dtype == np.float64 else vals
        src = []
    try:
        np.broadcast_shapes(np.shape(vals), view.shape)
    except ValueError:
        raise fail(ERR_SHAPE, f"cannot assign shape {np.shape(vals)} to `{view.name}` view of shape {view.shape}.",
                   "match the shapes.") from None
    vals = np.asarray(vals)
    if vals.dtype != dtypes.storage_dtype(view.dtype):
        # integers cast directly (saturating), anything else goes through fp32 like an engine write
        vals = dtypes.cast(vals if vals.dtype.kind in "iub" else dtypes.to_compute(vals), view.dtype)
    view.write(vals, mask)
    run.cost.sync(src, [view.storage])
