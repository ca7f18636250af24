"""Legacy `nl.loop_reduce(x, op, loop_indices, dtype=, mask=)`: reduce `x` into its destination across the
iterations of a loop.

AWS documents that the destination tile is also the right-hand input of `op`: `b = nl.loop_reduce(a,
op=np.add, loop_indices=[k])` is `b = nisa.tensor_tensor(data1=b, data2=a, op=np.add)`, and the published
kernels write `acc[i] = nl.loop_reduce(psum, np.add, [k], dtype=...)` to accumulate K blocks into `acc`. An
eager simulator sees neither destination as an argument, so both forms are recovered here:

* assigned into a tile view (`acc[...] = ...`): the call returns a tile marked with `(op, x)`, and the
  assignment (`Tile.__setitem__`) combines it with the view's current values, under `mask=`;
* bound to a name (`b = ...`): the kernel's frame is read for the name's current value (the bytecode after
  the call says which name receives the result); an unbound name starts the reduction with `x`.
"""

from __future__ import annotations

import dis
from types import CodeType, FrameType
from typing import Any

import numpy as np

from .. import dtypes
from ..core.buffers import SBUF
from ..core.tensor import NkiTensor
from ..errors import ERR_INVALID_ARG, ERR_SHAPE, fail, kernel_frame
from ..core.alu import binary, op_name
from .common import allocate, check_on_chip, mark_result, mask_array, read, write
from .elementwise import _vector_cost, tensor_copy, tensor_tensor

_STORES = {"STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"}
_TARGETS: dict[tuple[CodeType, int], tuple[str, str] | None] = {}


def _store_target(frame: FrameType) -> tuple[str, str] | None:
    """(store opcode, name) when the call at `frame.f_lasti` is stored straight into a name."""
    key = (frame.f_code, frame.f_lasti)
    if key not in _TARGETS:
        target = None
        for ins in dis.get_instructions(frame.f_code):
            if ins.offset > frame.f_lasti and ins.opname not in ("CACHE", "PRECALL"):
                target = (ins.opname, str(ins.argval)) if ins.opname in _STORES else None
                break
        if len(_TARGETS) < 4096:
            _TARGETS[key] = target
        return target
    return _TARGETS[key]


def _bound_value(frame: FrameType, opname: str, name: str) -> Any:
    if opname == "STORE_GLOBAL":
        return frame.f_globals.get(name)
    if opname == "STORE_NAME":
        return frame.f_locals.get(name, frame.f_globals.get(name))
    return frame.f_locals.get(name)


def loop_reduce(x: Any, op: Any, loop_indices: Any, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    api = "nl.loop_reduce"
    if not isinstance(x, NkiTensor):
        raise fail(ERR_INVALID_ARG, f"{api} reduces a tile; got {type(x).__name__}.", "pass an SBUF or PSUM tile.")
    check_on_chip(x, api, "x")
    name = op_name(op)
    m = mask_array(mask)
    out_dtype = dtypes.as_dtype(dtype) if dtype is not None else x.dtype
    frame = kernel_frame()
    target = _store_target(frame) if frame is not None else None
    prev = _bound_value(frame, *target) if frame is not None and target is not None else None
    dst = allocate(x.shape, out_dtype, SBUF)
    if isinstance(prev, NkiTensor):  # `b = nl.loop_reduce(a, ...)`: b = op(b, a)
        if prev.shape != x.shape:
            raise fail(ERR_SHAPE, f"{api}: the destination `{target[1]}` has shape {prev.shape} but the reduced "  # type: ignore[index]
                       f"tile has shape {x.shape}.", "reduce into a tile of the same shape.")
        tensor_tensor(dst, prev, x, name, mask=m, api=api)
        if m is not None:  # masked-off elements keep the destination's values
            keep = ~np.broadcast_to(m, dst.shape)
            write(dst, np.where(keep, read(prev), read(dst)), None, api)
        return dst
    # `acc[...] = nl.loop_reduce(x, ...)` (or the first binding of a name): the value is `x`; an assignment
    # into a view combines it with the view (`combine_into`)
    tensor_copy(dst, x, mask=m, api=api)
    dst.storage.loop_reduce = (name, read(x), dtype)
    return mark_result(dst, m)


def combine_into(view: NkiTensor, value: NkiTensor) -> None:
    """`view[...] = <loop_reduce result>`: view = op(view, x) where the call's mask held (one Vector
    instruction, as the compiler emits it)."""
    name, source, dtype = value.storage.loop_reduce
    produced = value.storage.result_mask
    m = None if produced is None else np.broadcast_to(produced, value.shape)
    try:
        combined = binary(name, read(view), source)
    except ValueError:
        raise fail(ERR_SHAPE, f"nl.loop_reduce result of shape {value.shape} is assigned to `{view.name}` of "
                   f"shape {view.shape}.", "assign it to a view of the same shape.") from None
    if dtype is not None:
        combined = dtypes.to_compute(dtypes.cast(combined, dtypes.as_dtype(dtype)))
    write(view, combined, m, "nl.loop_reduce")
    _vector_cost("nl.loop_reduce", view, [view, value], "tensor_tensor")
