"""DMA: HBM <-> SBUF copies (`nl.load` / `nl.store` / `nisa.dma_copy`), DMA transposes, constants.

A DMA moves elements between any two views with the same element count, converting dtype through fp32.
Its cost is the bytes moved at the target's per-queue bandwidth plus a fixed cost per descriptor (one
contiguous run), so short runs are inefficient (reference §3: DMA is efficient only for long runs per
partition; `cost.DMA_DESCRIPTOR_NS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import alu, context
from ..core.buffers import HBM, SBUF, SHARED_HBM, Storage
from ..core.tensor import NkiTensor
from ..errors import (
    ERR_HBM_INIT,
    ERR_MEMORY,
    ERR_SHAPE,
    ERR_STORE_SHAPE,
    NkiDmaIndexError,
    fail,
)
from .common import (
    allocate,
    check_partitions,
    mark_result,
    mask_for,
    output_mask,
    write,
)


def _chunks(t: NkiTensor) -> int:
    """Contiguous runs a DMA of this view is cut into (one per row of the innermost contiguous dim)."""
    if not t.shape or t.size == 0:
        return 1
    if t.index is not None:
        rows = t.index.reshape(-1, t.shape[-1])
        return int(rows.shape[0] + np.count_nonzero(np.diff(rows, axis=1) != 1))
    inner = 1
    for n, s in zip(reversed(t.shape), reversed(t.strides or ())):
        if s != inner and n > 1:
            break
        inner *= n
    if t.buffer.on_chip:  # a run never crosses partitions: each partition is its own memory
        inner = min(inner, t.free_size)
    return max(t.size // max(inner, 1), 1)


def record_dma(src: NkiTensor, dst: NkiTensor, hw_transpose: bool = False) -> None:
    """Charge a transfer. A hardware DMA transpose (NC-v3+) reads and writes whole rows, so only the
    destination's runs count. Otherwise each contiguous run is a descriptor, except HBM runs shorter than
    an HBM burst (an element-strided side, e.g. a transposing store): those are walked inside the on-chip
    side's partition-row descriptors, each run costing one whole burst (`cost.HBM_BURST_BYTES`)."""
    run = context.current()
    if not run.accounting:
        return
    nbytes = dst.size * dtypes.itemsize(dst.dtype)
    if hw_transpose:
        run.issue_dma(nbytes, _chunks(dst), src, dst)
        return
    src_runs, dst_runs = _chunks(src), _chunks(dst)
    runs, moved = max(src_runs, dst_runs), None
    for hbm, hbm_runs, chip, chip_runs in ((src, src_runs, dst, dst_runs), (dst, dst_runs, src, src_runs)):
        if hbm.buffer.is_hbm and chip.buffer.on_chip and hbm_runs > chip_runs:
            run_bytes = hbm.size * dtypes.itemsize(hbm.dtype) / hbm_runs
            if run_bytes < cost.HBM_BURST_BYTES:
                runs, moved = chip_runs, hbm_runs * cost.HBM_BURST_BYTES
    run.issue_dma(nbytes, runs, src, dst, moved)


def _check_indirect(view: NkiTensor, mask: np.ndarray | None) -> None:
    """An indirect access (runtime indices) outside the tensor fails the DMA, as on hardware with
    oob_mode=error. (Affine `nl.arange` indices are checked as the compiler does, with the documented
    `err_tensor_access_out_of_bound` message, when the view is read.)"""
    runtime = [b for b in view.bounds if b.runtime]
    if not runtime:
        return
    bad = np.zeros(view.shape, dtype=np.bool_)
    for b in runtime:
        bad |= np.broadcast_to((b.indices < 0) | (b.indices >= b.size), view.shape)
    if mask is not None:
        bad &= np.broadcast_to(mask, view.shape)
    if bad.any():
        raise NkiDmaIndexError(int(view.index[bad][0]), view.storage.size, view.name,  # type: ignore[index]
                               "keep the index tile inside the tensor, or pass oob_mode=nisa.oob_mode.skip to drop "
                               "out-of-range rows.")


def _transfer(dst: NkiTensor, src: NkiTensor, mask: np.ndarray | None, api: str, oob_skip: bool = False,
              rmw_op: Any = None, hw_transpose: bool = False) -> np.ndarray | None:
    """Returns the elements of `dst` written (None: all of them)."""
    if src.size != dst.size:
        raise fail(ERR_SHAPE, f"'{api}' copies {src.size} elements of `{src.name}` {src.shape} into {dst.size} "
                   f"elements of `{dst.name}` {dst.shape}.", "make the element counts equal.")
    smask = mask_for(mask, src.shape) if mask is not None else None
    dmask = mask_for(mask, dst.shape) if mask is not None else None
    if oob_skip:
        ok = np.ones(src.shape, dtype=np.bool_)
        for view, m in ((src, smask), (dst, dmask)):
            for b in view.bounds:
                idx = b.indices
                ok &= np.broadcast_to((idx >= 0) & (idx < b.size), src.shape) if idx.shape == src.shape else True
        smask = ok if smask is None else (ok & smask)
        dmask = smask if src.shape == dst.shape else dmask
    else:
        if src.bounds:  # only gather views have bounds to check
            _check_indirect(src, smask)
        if dst.bounds:
            _check_indirect(dst, dmask)
    values = src.read(smask)
    if src.shape != dst.shape:
        values = values.reshape(dst.shape)
    if values.dtype != dtypes.storage_dtype(dst.dtype):
        values = dtypes.cast(dtypes.to_compute(values), dst.dtype)
    if rmw_op is not None:
        current = dtypes.to_compute(dst.read(dmask))
        values = dtypes.cast(alu.binary(alu.op_name(rmw_op), current, dtypes.to_compute(values)), dst.dtype)
    dst.write(values, dmask)
    record_dma(src, dst, hw_transpose)
    return dmask


def dma_copy(dst: NkiTensor, src: NkiTensor, mask: np.ndarray | None = None, oob_mode: Any = None,
             dst_rmw_op: Any = None, api: str = "dma_copy") -> None:
    run = context.current()
    if run.accounting:  # a repeat of a checked signature: these operands passed then
        if src.buffer.name == "psum" and run.api == "current":  # src.buffer == PSUM
            raise fail(ERR_MEMORY, f"'{api}' cannot read PSUM (`{src.name}`).", "copy the PSUM tile to SBUF with "
                       "nisa.tensor_copy first.")
        for t, arg in ((src, "src"), (dst, "dst")):
            if t.buffer.on_chip and t.partitions > run.target.pmax:  # DMA has no start-partition rule
                check_partitions(t, api, arg)
    _transfer(dst, src, mask, api, oob_skip=skips_out_of_bounds(oob_mode), rmw_op=dst_rmw_op)


def skips_out_of_bounds(mode: Any) -> bool:
    """`oob_mode=` / legacy `mode=` of a DMA: True for `oob_mode.skip` (drop out-of-bounds elements of an
    indirect access), False for None or `oob_mode.error`."""
    return mode is not None and str(getattr(mode, "name", mode)) == "skip"


def load(src: NkiTensor, dtype: Any = None, mask: np.ndarray | None = None, api: str = "load",
         oob_skip: bool = False) -> NkiTensor:
    if not isinstance(src, NkiTensor) or not src.buffer.is_hbm:
        got = src.buffer.name if isinstance(src, NkiTensor) else type(src).__name__
        raise fail(ERR_MEMORY, f"Expected operand 'src' of '{api}' to be in address space 'hbm', but got a tile in "
                   f"'{got}'.", "nl.load reads HBM tensors; use nl.copy / nisa.tensor_copy for on-chip tiles.")
    shape = src.shape if len(src.shape) >= 2 else (1,) * (2 - len(src.shape)) + src.shape
    dst = allocate(shape, dtype if dtype is not None else src.dtype, SBUF)
    dst.storage.loaded = True
    written = _transfer(dst, src, mask, api, oob_skip=oob_skip)
    # assigned into a declared tile, the load writes there itself: rows it skipped keep the tile's values
    return mark_result(dst, written.reshape(dst.shape) if oob_skip and written is not None else mask)


def store(dst: NkiTensor, value: Any, mask: np.ndarray | None = None, api: str = "store",
          oob_skip: bool = False) -> None:
    if not isinstance(dst, NkiTensor) or not dst.buffer.is_hbm:
        got = dst.buffer.name if isinstance(dst, NkiTensor) else type(dst).__name__
        raise fail(ERR_MEMORY, f"Expected operand 'dst' of '{api}' to be in address space 'hbm', but got a tile in "
                   f"'{got}'.", "nl.store writes HBM tensors; write on-chip tiles by assignment or nisa ops.")
    if not isinstance(value, NkiTensor):
        tile = allocate(dst.shape, dst.dtype, SBUF)
        write(tile, np.float32(value), None, api)
        value = tile
    if value.buffer.is_hbm:
        raise fail(ERR_MEMORY, f"Expected operand 'value' of '{api}' to be in address space 'sbuf', but got a tile in "
                   f"'{value.buffer.name}'.", "load the data into SBUF first.")
    # a 1-D HBM tensor loads as a (1, n) tile (load above); storing that tile back is the same n elements
    one_d_round_trip = dst.ndim == 1 and value.shape == (1, dst.shape[0])
    if value.shape != dst.shape and not one_d_round_trip:
        if value.size > dst.size or np.broadcast_shapes(value.shape, dst.shape) != dst.shape:
            raise fail(ERR_STORE_SHAPE, f"store destination `{dst.name}` {dst.shape} is smaller than the value "
                       f"{value.shape}.", "store into a destination of the value's shape (slice the value or "
                       "widen the destination).")
        if value.size != dst.size:
            from ..core import views
            value = views.broadcast_to(value, dst.shape)
    _transfer(dst, value, mask, api, oob_skip=oob_skip)


def load_transpose2d(src: NkiTensor, dtype: Any = None, mask: np.ndarray | None = None) -> NkiTensor:
    if not src.buffer.is_hbm or src.ndim != 2:
        raise fail(ERR_MEMORY, f"load_transpose2d reads a 2-D HBM tensor, got `{src.name}` {src.shape} in "
                   f"'{src.buffer.name}'.", "pass a 2-D HBM view.")
    from ..core import views
    dst = allocate((src.shape[1], src.shape[0]), dtype if dtype is not None else src.dtype, SBUF)
    hw = context.current().target.generation >= 3 and dtypes.itemsize(src.dtype) in (2, 4)
    _transfer(dst, views.permute(src, 1, 0), None, "load_transpose2d", hw_transpose=hw)
    return dst


def dma_transpose(dst: NkiTensor, src: NkiTensor, axes: Any = None, api: str = "dma_transpose",
                  mask: np.ndarray | None = None) -> None:
    """dst = src permuted by `axes` (default: reversed), on the DMA engine's transpose hardware; a mask
    over dst limits what is written."""
    from ..core import views
    if dtypes.itemsize(src.dtype) not in (2, 4):
        raise fail(ERR_MEMORY, f"'{api}' supports 2- and 4-byte dtypes, got {dtypes.name(src.dtype)}.",
                   "transpose on the Tensor engine (nisa.nc_transpose) instead.")
    order = tuple(axes) if axes is not None else tuple(reversed(range(src.ndim)))
    view = views.permute(src, *order)
    if mask is not None:
        mask = output_mask(api, mask, dst.shape)
        if view.shape != dst.shape:
            raise fail(ERR_SHAPE, f"'{api}' with mask= needs dst shaped like the transposed src {view.shape}.",
                       "allocate dst with the transposed shape.")
    _transfer(dst, view, mask, api, hw_transpose=True)


def shared_constant(constant: Any, dtype: Any = None) -> NkiTensor:
    arr = np.asarray(constant)
    dt = dtypes.as_dtype(dtype if dtype is not None else (arr.dtype if arr.dtype != np.float64 else np.float32))
    st = Storage(arr.shape, dt, SHARED_HBM, data=dtypes.cast(arr.astype(np.float32) if arr.dtype.kind == "f" else arr,
                                                             dt).reshape(-1).copy())
    return context.current().tensor_class.whole(st)


def hbm_array(shape: Any, dtype: Any, buffer: Any = HBM, name: str = "", init: Any = None) -> NkiTensor:
    if init is not None:
        raise fail(ERR_HBM_INIT, f"HBM tensor {name!r} allocated with an initial value.",
                   "allocate it uninitialised and nl.store the values, or pass the data as a kernel input.")
    return allocate(shape, dtype, buffer, name)




def dma_compute(dst: NkiTensor, srcs: Any, reduce_op: Any, scales: Any = None, api: str = "dma_compute") -> None:
    """dst = reduce_op(src_0 * scale_0, src_1 * scale_1, ...), element-wise, computed by the DMA engine."""
    srcs = list(srcs)
    if not srcs:
        raise fail(ERR_SHAPE, f"'{api}' needs at least one source.", "pass srcs=[a, b, ...].")
    factors = list(scales) if scales is not None else [1.0] * len(srcs)
    name = alu.op_name(reduce_op, "reduce_op")
    acc = None
    for src, factor in zip(srcs, factors):
        if src.size != dst.size:
            raise fail(ERR_SHAPE, f"'{api}' source `{src.name}` has {src.size} elements, dst has {dst.size}.",
                       "give every source the destination's element count.")
        vals = dtypes.to_compute(src.read()).reshape(dst.shape) * np.float32(factor)
        acc = vals if acc is None else alu.binary(name, acc, vals)
    dst.write(dtypes.cast(acc, dst.dtype))
    for src in srcs:
        record_dma(src, dst)
