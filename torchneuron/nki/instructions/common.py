"""Operand rules every instruction shares: where operands may live, partition limits, dtypes, the target
generation an instruction needs, masks, fp32 reads, cast-on-write, allocating the tiles legacy calls return,
and the default charge of an instruction that writes one tile."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import context
from ..core.buffers import SBUF, SHARED_HBM, Buffer, Storage
from ..core.indexing import Mask, split_shape
from ..core.tensor import NkiTensor, row_major_strides
from ..errors import (
    ERR_DTYPE,
    ERR_INVALID_ARG,
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
    run = context.current()
    if not run.accounting:  # a repeat of a checked launch signature: this very operand passed then
        return
    pmax = limit or run.target.pmax
    if t.checked == pmax:  # the same view passed before (layouts never change)
        return
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
    start = int((t.offset // st.partition_stride) % max(st.partitions, 1))  # st.partition_of(t.offset)
    allowed = (0,) if p > 64 else (0, 64) if p > 32 else (0, 32, 64, 96)
    if start not in allowed:
        raise fail(ERR_START_PARTITION, f"operand '{arg}' of '{api}' spans {p} partitions starting at partition "
                   f"{start}; {p} partitions may only start at {allowed}.",
                   "align the tile's first partition (32-partition quadrants), or copy it to partition 0.")
    t.checked = pmax


def read(t: Operand, mask: np.ndarray | None = None) -> Any:
    """An operand as the engines see it: fp32 array (or a scalar). Never mutate the result."""
    if isinstance(t, NkiTensor):
        return t.read_compute(mask_for(mask, t.shape) if mask is not None else None)
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
    if values.shape != dst.shape:
        try:
            np.broadcast_shapes(values.shape, dst.shape)
        except ValueError:
            raise fail(ERR_SHAPE, f"'{api}' produces shape {values.shape} but its destination `{dst.name}` has "
                       f"shape {dst.shape}.", "make the destination tile the shape of the result.") from None
        if values.size > dst.size:
            raise fail(ERR_SHAPE, f"'{api}' produces shape {values.shape}, larger than destination `{dst.name}` "
                       f"{dst.shape}.", "make the destination tile the shape of the result.")
    dst.write(dtypes.cast(values, dst.dtype), mask_for(mask, dst.shape) if mask is not None else None)


def reduce_rows(api: str, reduce_res: NkiTensor, rows: np.ndarray) -> np.ndarray:
    """An instruction's per-partition reduction `rows` (P values) shaped for its `reduce_res`, which holds
    one value per partition; any other shape is a shape error, never a silent broadcast."""
    rows = np.asarray(rows).reshape(-1)
    if reduce_res.size == rows.size:
        return rows.reshape(reduce_res.shape)
    raise fail(ERR_SHAPE, f"'{api}' reduces to one value per partition ({rows.size}, 1) but reduce_res "
               f"`{reduce_res.name}` has shape {reduce_res.shape}.", "pass a (partitions, 1) reduce_res tile.")


def output_mask(api: str, mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """A `mask=` over an instruction's output: which elements it writes. A mask that does not fit the
    output is an error, never ignored."""
    if mask is None:
        return None
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise fail(ERR_SHAPE, f"'{api}': mask= of shape {np.shape(mask)} does not fit its output {shape}.",
                   "build the predicate from index expressions over the output tile (nl.mgrid over its shape).") \
            from None


def input_mask(api: str, mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """A `mask=` over a reduction's input: which elements take part."""
    if mask is None:
        return None
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise fail(ERR_SHAPE, f"'{api}': mask= of shape {np.shape(mask)} fits neither its input {shape} nor "
                   "its output.", "build the predicate from index expressions over the input tile.") from None


def mark_result(dst: NkiTensor, mask: np.ndarray | None) -> NkiTensor:
    """A fresh result tile of an instruction run under `mask=`: only the masked elements are its value
    (see `assign`)."""
    if mask is not None:
        dst.storage.result_mask = mask
    return dst


def broadcast_shape(api: str, *operands: Operand) -> tuple[int, ...]:
    shapes = [t.shape for t in operands if isinstance(t, NkiTensor)]
    if not shapes:
        return ()
    if shapes.count(shapes[0]) == len(shapes):  # the usual case: nothing to broadcast
        return tuple(shapes[0])
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        parts = {s[0] for s in shapes if s}
        code = ERR_PARTITION_MISMATCH if len(parts - {1}) > 1 else ERR_SHAPE
        raise fail(code, f"operands of '{api}' have incompatible shapes {shapes}.",
                   "give operands the same partition count; free dims must match or be 1.") from None


def allocate(shape: Any, dtype: Any, buffer: Buffer = SBUF, name: str = "",
             physical_tiles: int | None = None) -> NkiTensor:
    """A new tensor in `buffer`, filled with the sentinel; on chip it occupies capacity while it is live
    (`core.memory`). `physical_tiles`: a manually placed block tensor's physical tile count."""
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
        st = Storage(plain, dt, buffer, name, paxis)  # on chip: no HBM branch below applies, no write tracking
        if run.accounting:
            run.memory.place(st, physical_tiles)
        return run.tensor_class.whole(st)
    if buffer.name == "shared_hbm":  # buffer == SHARED_HBM, without Buffer.__eq__'s call per allocation
        return _shared(run, plain, dt, name)
    if buffer.is_hbm and run.api == "legacy" and _at_kernel_level(run):
        # legacy kernels return nl.hbm outputs: one tensor for the whole grid, as shared_hbm is
        return _shared(run, plain, dt, name, buffer)
    st = Storage(plain, dt, buffer, name, paxis, track_writes=buffer.is_hbm)
    return run.tensor_class.whole(st)


_SHARED_LOCK = threading.Lock()  # LNC programs allocate shared tensors from two threads


def _at_kernel_level(run: context.KernelRun) -> bool:
    frame = kernel_frame()
    return run.kernel_code is None or frame is None or frame.f_code is run.kernel_code


def _shared(run: context.KernelRun, shape: tuple[int, ...], dt: np.dtype, name: str,
            buffer: Buffer = SHARED_HBM) -> NkiTensor:
    # where outputs are allocated is part of the instruction stream: checked once per launch signature
    if buffer == SHARED_HBM and run.accounting and not _at_kernel_level(run):
        frame = kernel_frame()
        where = frame.f_code.co_name if frame is not None else "?"
        raise fail(ERR_SHARED_HBM_LEVEL, f"shared_hbm tensor {name or ''!r} is allocated in `{where}`, "
                   "not in the kernel function itself.", "allocate kernel outputs in the @nki.jit function's body "
                   "and pass them to helpers.")
    with _SHARED_LOCK:
        return _shared_locked(run, shape, dt, name, buffer)


def _shared_locked(run: context.KernelRun, shape: tuple[int, ...], dt: np.dtype, name: str,
                   buffer: Buffer) -> NkiTensor:
    i = run.shared_next
    run.shared_next += 1
    if i < len(run.shared):
        st = run.shared[i]
        if st.shape != shape or st.dtype != dt:
            raise fail(ERR_SHAPE, f"shared_hbm tensor {name or st.name!r} is allocated as {shape} "
                       f"{dtypes.name(dt)} by program {run.program_ids} but as {st.shape} {dtypes.name(st.dtype)} by "
                       "program 0.", "allocate kernel outputs with the same shape in every program of the grid.")
        return run.tensor_class.whole(st)
    data = run.hbm_data(shape, dt) if run.hbm_data is not None else None
    if data is not None:
        data[...] = dtypes.sentinel(dt)  # uninitialised, as the simulator's own memory
    # which elements get written follows from the instructions too: a repeat of a checked signature (the check
    # and its warning ran once) does not track them
    st = Storage(shape, dt, buffer, name, 0, data=data, track_writes=run.accounting)
    st.data  # noqa: B018  (made now, under the lock: the programs of an LNC launch share it from two threads)
    run.shared.append(st)
    return run.tensor_class.whole(st)


def assign(view: NkiTensor, value: Any, mask: np.ndarray | None = None) -> None:
    """`tile[...] = value`: the value lands in the tile (the compiler has the producing instruction write
    there directly, at no cost). A result the producer wrote under `mask=` lands only where the mask held,
    as the instruction writing in place would leave the other elements of the destination alone."""
    run = context.current()
    source = value.buffer.name if isinstance(value, NkiTensor) else "a constant"
    if view.buffer.is_hbm or (isinstance(value, NkiTensor) and value.buffer.is_hbm):
        raise fail(ERR_MEMORY, f"assigning {source} to `{view.name}` in '{view.buffer.name}' moves data between HBM "
                   "and the chip: that is a DMA, not an assignment.", "use nl.load / nl.store / nisa.dma_copy.")
    if isinstance(value, NkiTensor):
        produced = value.storage.result_mask
        if produced is not None and value.index is None and value.offset == 0 \
                and value.shape == value.storage.shape and value.strides == row_major_strides(value.shape):
            produced = np.broadcast_to(produced, value.shape)
            mask = produced if mask is None else (np.broadcast_to(mask, value.shape) & produced)
        vals = value.read(mask_for(mask, value.shape))
        if value.storage.loaded and value.size == view.size and value.shape != view.shape:
            # `col[...] = nl.load(hbm[1])` with col (n, 1): the DMA writes the n elements there in order
            vals = vals.reshape(view.shape)
        # a result the previous instruction just produced is written into the tile by that instruction
        # itself (the compiler folds the copy): it does not stay live for the assignment, but the tile is
        # ready only when that instruction ends (the move reads it, then the fold drops its range)
        folded = run.accounting and run.memory.produced_last(value.storage)
        src = [value]
    else:
        vals = np.asarray(value)
        vals = vals.astype(np.float32) if vals.dtype == np.float64 else vals
        src, folded = [], False
    try:
        np.broadcast_shapes(np.shape(vals), view.shape)
    except ValueError:
        raise fail(ERR_SHAPE, f"cannot assign shape {np.shape(vals)} to `{view.name}` view of shape {view.shape}.",
                   "match the shapes.") from None
    vals = np.asarray(vals)
    if vals.dtype != dtypes.storage_dtype(view.dtype):
        # integers cast directly (saturating), anything else goes through fp32 like an engine write
        vals = dtypes.cast(vals if vals.dtype.kind in "iub" else dtypes.to_compute(vals), view.dtype)
    if mask is not None and np.shape(vals) != view.shape:
        vals = np.broadcast_to(vals, view.shape)
    view.write(vals, mask_for(mask, view.shape) if mask is not None else None)
    run.issue_move(src, [view])
    if folded:
        run.memory.fold(value.storage)


_ENGINE_NAMES: dict[tuple, str] = {}


def memo_engine_name(key: tuple, resolve: Callable[[], str]) -> str:
    """The engine enums and names a kernel passes are few: each is resolved once (an enum's ``.name`` is a
    Python descriptor). Callers key by type too, as IntEnum members equal their ints
    (engine.tensor == 1 == dma_engine.gpsimd_dma)."""
    try:
        return _ENGINE_NAMES[key]
    except (KeyError, TypeError):
        pass
    name = resolve()
    try:
        if len(_ENGINE_NAMES) < 256:  # a handful in practice; never unbounded
            _ENGINE_NAMES[key] = name
    except TypeError:  # an unhashable stand-in
        pass
    return name


def charge(engine: str, dst: NkiTensor, inputs: list[Any], cycles: float | None = None) -> None:
    """Record one instruction writing `dst`; by default `150 + N` on GpSimd, `max(MIN_II, N)` elsewhere."""
    run = context.current()
    n = dst.free_size
    if cycles is None:
        cycles = cost.gpsimd_cycles(n) if engine == "gpsimd" else max(cost.MIN_II, n)
    run.issue(engine, cycles, inputs, (dst,), cost.SBUF_ACCESS_CYCLES)


def check_gpsimd_sbuf(api: str, **operands: Any) -> None:
    """GpSimd operands live in SBUF (the engine cannot reach PSUM or HBM)."""
    for arg, t in operands.items():
        if isinstance(t, NkiTensor):
            check_buffer(t, api, arg, (SBUF,))
            check_partitions(t, api, arg)


def need_generation(api: str, generation: int) -> None:
    run = context.current()
    if run.target.generation < generation:
        raise fail(ERR_INVALID_ARG, f"nisa.{api} needs NeuronCore-v{generation} or later; the target is "
                   f"{run.target.name}.", f"set NEURON_PLATFORM_TARGET_OVERRIDE to a NeuronCore-v{generation}+ target.")


def check_dtype(api: str, arg: str, t: NkiTensor, allowed: tuple[np.dtype, ...]) -> None:
    if dtypes.as_dtype(t.dtype) not in allowed:
        want = " or ".join(dtypes.name(d) for d in allowed)
        raise fail(ERR_DTYPE, f"operand '{arg}' of '{api}' is {dtypes.name(t.dtype)}; it must be {want}.",
                   f"give `{t.name}` the dtype {want}.")
