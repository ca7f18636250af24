"""`NkiTensor`: a view (shape, strides, offset) or a gather (an array of offsets) into one `Storage`.

Element address = offset + sum(strides[k] * i[k]), exactly the access-pattern model of the current NKI API,
so slicing, `.ap(...)`, permutes and broadcasts are free views and every read or write is one NumPy
operation on the whole tile. Legacy affine-index accesses (`t[i_p, 2*i_f+1]`) become gathers whose bounds
are checked when an instruction uses them, because only then is the instruction's `mask=` known.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes
from ..errors import ERR_1D_ARANGE, ERR_MIXED_INDEXING, ERR_OOB, ERR_SHAPE, ERR_TRUTH_VALUE, fail
from .buffers import PSUM, Buffer, Storage
from .indexing import IndexArray, Mask
from .pending import flush


_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def oob(name: str, dim: int, lo: int, hi: int, size: int) -> Exception:
    return fail(ERR_OOB, f"Out-of-bound access for tensor `{name}` on dimension {dim}: index range "
                f"[{lo}, {hi}] exceed dimension size of {size}.",
                "keep indices inside the tensor, or guard the tail tile with a mask= predicate / smaller slice.")


class NkiTensor:
    """A tensor in HBM, SBUF or PSUM as a kernel sees it."""

    __array_priority__ = 100  # `np_scalar * tile` uses our operators

    def __init__(self, storage: Storage, shape: tuple[int, ...], strides: tuple[int, ...] | None, offset: int,
                 pdim: int | None = 0, index: np.ndarray | None = None,
                 pending: tuple[tuple[int, np.ndarray, int], ...] = ()) -> None:
        self.storage = storage
        self.shape = tuple(int(s) for s in shape)
        self.strides = strides
        self.offset = int(offset)
        self.pdim = pdim
        self.index = index          # gather views: flat offsets, shape == self.shape
        self.pending = pending      # gather bounds checked at use: (dim, indices, dim size)

    @classmethod
    def whole(cls, storage: Storage) -> NkiTensor:
        pdim = storage.partition_axis if storage.buffer.on_chip else 0
        return cls(storage, storage.shape, row_major_strides(storage.shape), 0, pdim)

    # ---- properties ----
    @property
    def dtype(self) -> np.dtype:
        return self.storage.dtype

    @property
    def buffer(self) -> Buffer:
        return self.storage.buffer

    @property
    def name(self) -> str:
        return self.storage.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def partitions(self) -> int:
        return self.shape[self.pdim] if self.pdim is not None and self.shape else 1

    @property
    def free_size(self) -> int:
        return self.size // max(self.partitions, 1)

    @property
    def is_gather(self) -> bool:
        return self.index is not None

    def __repr__(self) -> str:
        return f"NkiTensor({self.name}, shape={self.shape}, dtype={dtypes.name(self.dtype)}, {self.buffer!r})"

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        raise fail(ERR_TRUTH_VALUE, f"the truth value of tensor `{self.name}` is ambiguous.",
                   "compare values with nl.equal/nl.greater and use the result as data or a predicate.")

    # ---- raw access ----
    def offsets(self) -> np.ndarray:
        """Flat storage offsets of every element (gathers keep them; strided views compute them)."""
        if self.index is not None:
            return self.index
        out = np.full(self.shape, self.offset, dtype=np.int64)
        for k, (n, s) in enumerate(zip(self.shape, self.strides or ())):
            shape = [1] * self.ndim
            shape[k] = n
            out += (np.arange(n, dtype=np.int64) * s).reshape(shape)
        return out

    def _strided(self, data: np.ndarray) -> np.ndarray:
        item = data.itemsize
        strides = tuple(s * item for s in self.strides or ())
        if data.dtype.type.__module__.startswith("ml_dtypes"):
            # as_strided goes through __array_interface__, which loses ml_dtypes types: stride the raw bits
            raw = data.view(_RAW[item])
            return as_strided(raw[self.offset:], self.shape, strides).view(data.dtype)
        return as_strided(data[self.offset:], self.shape, strides)

    def check_bounds(self, mask: np.ndarray | None = None) -> None:
        for dim, idx, size in self.pending:
            live = idx if mask is None else idx[np.broadcast_to(mask, idx.shape)] if idx.shape else idx
            bad = (live < 0) | (live >= size)
            if np.any(bad):
                raise oob(self.name, dim, int(live.min()), int(live.max()), size)

    def _safe_index(self, mask: np.ndarray | None) -> np.ndarray:
        self.check_bounds(mask)
        if mask is None or not self.pending:
            return self.index  # type: ignore[return-value]
        return np.where(np.broadcast_to(mask, self.shape), self.index, 0)

    def read(self, mask: np.ndarray | None = None) -> np.ndarray:
        """The values in storage dtype (masked-off gather elements read element 0 instead of faulting)."""
        if self.storage.dataless:  # shape-only launch: the shape is all there is
            return np.zeros(self.shape, dtypes.storage_dtype(self.dtype))
        if self.storage.pending is not None:
            flush(self.storage)
        data = self.storage.data
        if self.index is None:
            return self._strided(data)
        return data[self._safe_index(mask)]

    def write(self, values: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Store already-cast `values` (broadcast to this view) where `mask` holds. Bookkeeping: outputs
        remember what was written; a PSUM element that holds a value is no longer fresh, so the next
        `accumulate=None` matmul adds to it until another engine reads it."""
        st = self.storage
        if st.dataless:
            return
        values = np.broadcast_to(values, self.shape)
        if st.pending is not None:
            flush(st)
        if self.index is None:
            targets = [(st.data, values)]
            if st.written is not None:
                targets.append((st.written, True))
            if st.psum_fresh is not None:
                targets.append((st.psum_fresh, False))
            for arr, val in targets:
                view = self._strided(arr)
                if mask is None:
                    view[...] = val
                else:
                    np.copyto(view, np.broadcast_to(val, self.shape), where=np.broadcast_to(mask, self.shape))
            return
        idx = self._safe_index(mask)
        if mask is not None:
            keep = np.broadcast_to(mask, self.shape)
            idx, values = idx[keep], values[keep]
        st.data[idx] = values
        if st.written is not None:
            st.written[idx] = True
        if st.psum_fresh is not None:
            st.psum_fresh[idx] = False

    def psum_mark(self, fresh: bool, mask: np.ndarray | None = None) -> None:
        """PSUM accumulation groups: a read by another engine ends the group (next matmul overwrites)."""
        if self.storage.psum_fresh is None:
            return
        if self.storage.pending is not None:
            flush(self.storage)
        if self.index is None:
            view = self._strided(self.storage.psum_fresh)
            if mask is None:
                view[...] = fresh
            else:
                np.copyto(view, fresh, where=np.broadcast_to(mask, self.shape))
        else:
            idx = self._safe_index(mask)
            self.storage.psum_fresh[idx if mask is None else idx[np.broadcast_to(mask, self.shape)]] = fresh

    def psum_fresh_values(self) -> np.ndarray:
        fresh = self.storage.psum_fresh
        assert fresh is not None
        if self.storage.pending is not None:
            flush(self.storage)
        return self._strided(fresh) if self.index is None else fresh[self.index]

    def numpy(self) -> np.ndarray:
        return np.array(self.read())

    # ---- indexing ----
    def __getitem__(self, key: Any) -> NkiTensor:
        key = self._normalise_key(key)
        if self.index is not None:
            return self._index_gather(key)
        if any(isinstance(k, IndexArray) for k in key):
            return self._affine_gather(key)
        return self._basic(key)

    def _normalise_key(self, key: Any) -> tuple[Any, ...]:
        key = key if isinstance(key, tuple) else (key,)
        out: list[Any] = []
        for k in key:
            if isinstance(k, NkiTensor):  # indirect: an on-chip index tile
                k = IndexArray(k.read().astype(np.int64))
            elif isinstance(k, Mask):
                raise fail(ERR_SHAPE, "a predicate cannot index a tensor.", "pass it as mask= instead.")
            elif not isinstance(k, (slice, IndexArray, type(None), type(Ellipsis))):
                k = int(k)
            out.append(k)
        if any(k is Ellipsis for k in out):
            i = next(i for i, k in enumerate(out) if k is Ellipsis)
            fill = self.ndim - (len(out) - 1 - sum(k is None for k in out))
            out[i:i + 1] = [slice(None)] * fill
        if len(out) - sum(k is None for k in out) > self.ndim:
            raise fail(ERR_SHAPE, f"too many indices ({len(out)}) for tensor `{self.name}` of rank {self.ndim}.",
                       "index each dimension at most once.")
        return tuple(out)

    def _basic(self, key: tuple[Any, ...]) -> NkiTensor:
        shape, strides, offset = [], [], self.offset
        droppable: list[int] = []  # result positions of free-dim integers on chip (kept if rank < 2)
        pdim, dim = None, 0
        on_chip = self.buffer.on_chip
        for k in key:
            if k is None:
                shape.append(1)
                strides.append(0)
                continue
            size, stride = self.shape[dim], self.strides[dim]  # type: ignore[index]
            if isinstance(k, int):
                i = k + size if k < 0 else k
                if not 0 <= i < size:
                    raise oob(self.name, dim, k, k, size)
                offset += i * stride
                if on_chip:
                    if dim == self.pdim:
                        pdim = len(shape)
                    else:
                        droppable.append(len(shape))
                    shape.append(1)
                    strides.append(stride)
            else:
                start, stop, step = k.start, k.stop, k.step
                step = 1 if step is None else int(step)
                if step <= 0:
                    raise fail(ERR_SHAPE, f"slice step {step} on tensor `{self.name}` is not supported.",
                               "use a positive step.")
                start = 0 if start is None else int(start)
                stop = size if stop is None else int(stop)
                start = start + size if start < 0 else start
                stop = stop + size if stop < 0 else stop
                if start < 0 or stop > size or start > stop:
                    raise oob(self.name, dim, start, stop - 1, size)
                if dim == self.pdim:
                    pdim = len(shape)
                shape.append(-(-(stop - start) // step))
                strides.append(stride * step)
                offset += start * stride
            dim += 1
        for rest in range(dim, self.ndim):
            if rest == self.pdim:
                pdim = len(shape)
            shape.append(self.shape[rest])
            strides.append(self.strides[rest])  # type: ignore[index]
        # integers on free dims disappear unless the on-chip result would drop below 2-D
        keep = set()
        while droppable and len(shape) - len(droppable) + len(keep) < 2:
            keep.add(droppable.pop())
        drop = [p for p in droppable if p not in keep]
        for p in sorted(drop, reverse=True):
            del shape[p]
            del strides[p]
            if pdim is not None and pdim > p:
                pdim -= 1
        if not on_chip:
            pdim = 0
        return NkiTensor(self.storage, tuple(shape), tuple(strides), offset, pdim)

    def _affine_gather(self, key: tuple[Any, ...]) -> NkiTensor:
        if any(isinstance(k, slice) or k is None for k in key):
            raise fail(ERR_MIXED_INDEXING, f"tensor `{self.name}` is indexed with both slices and "
                       "nl.arange expressions.", "index every dimension with nl.arange/mgrid expressions "
                       "(or integers), or every dimension with slices.")
        if len(key) != self.ndim:
            raise fail(ERR_SHAPE, f"tensor `{self.name}` of rank {self.ndim} indexed with {len(key)} "
                       "expressions.", "give one index expression per dimension.")
        arrays = [k for k in key if isinstance(k, IndexArray)]
        if self.ndim > 1 and any(a.raw_arange and a.ndim == 1 and a.shape[0] > 1 for a in arrays):
            raise fail(ERR_1D_ARANGE, "a 1-D nl.arange indexes a multi-dimensional tensor.",
                       "give it a dimension, e.g. nl.arange(128)[:, None] for partitions and "
                       "nl.arange(512)[None, :] for the free dimension.")
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        index = np.full(shape, self.offset, dtype=np.int64)
        pending = []
        for dim, k in enumerate(key):
            stride = self.strides[dim]  # type: ignore[index]
            if isinstance(k, IndexArray):
                vals = np.broadcast_to(k.values, shape)
                pending.append((dim, vals, self.shape[dim]))
                index = index + vals * stride
            else:
                i = k + self.shape[dim] if k < 0 else k
                if not 0 <= i < self.shape[dim]:
                    raise oob(self.name, dim, k, k, self.shape[dim])
                index = index + i * stride
        return NkiTensor(self.storage, shape, None, 0, 0, index=index, pending=tuple(pending))

    def _index_gather(self, key: tuple[Any, ...]) -> NkiTensor:
        """Indexing a gather view again: index its offset array with the same bounds rules."""
        np_key = tuple(k.values if isinstance(k, IndexArray) else k for k in key)
        base = np.arange(self.size, dtype=np.int64).reshape(self.shape) if self.size else None
        if base is None:
            return self
        try:
            picked = base[np_key]
        except IndexError as e:
            raise fail(ERR_OOB, f"Out-of-bound access for tensor `{self.name}`: {e}.",
                       "keep indices inside the tile.") from None
        flat = picked.reshape(picked.shape if picked.ndim else (1,))
        offsets = self.index.reshape(-1)[flat]  # type: ignore[union-attr]
        return NkiTensor(self.storage, flat.shape, None, 0, 0, index=offsets, pending=())

    def __setitem__(self, key: Any, value: Any) -> None:
        from ..ops.common import assign
        view = self[key]
        if isinstance(value, NkiTensor) and value.storage is view.storage and value.offsets().shape == view.shape \
                and np.array_equal(value.offsets(), view.offsets()):
            return  # `t[i] += x` writes in place already, then Python stores the same view back
        assign(view, value)

    # ---- legacy tile operators (NkiTensor of the current API defines none) ----
    def _op(self, name: str, other: Any, reverse: bool = False) -> NkiTensor:
        from ..ops.elementwise import operator_call
        return operator_call(name, other, self) if reverse else operator_call(name, self, other)

    def __add__(self, o: Any) -> NkiTensor: return self._op("add", o)
    def __radd__(self, o: Any) -> NkiTensor: return self._op("add", o, True)
    def __sub__(self, o: Any) -> NkiTensor: return self._op("subtract", o)
    def __rsub__(self, o: Any) -> NkiTensor: return self._op("subtract", o, True)
    def __mul__(self, o: Any) -> NkiTensor: return self._op("multiply", o)
    def __rmul__(self, o: Any) -> NkiTensor: return self._op("multiply", o, True)
    def __truediv__(self, o: Any) -> NkiTensor: return self._op("divide", o)
    def __rtruediv__(self, o: Any) -> NkiTensor: return self._op("divide", o, True)
    def __pow__(self, o: Any) -> NkiTensor: return self._op("power", o)
    def __lshift__(self, o: Any) -> NkiTensor: return self._op("left_shift", o)
    def __rshift__(self, o: Any) -> NkiTensor: return self._op("right_shift", o)
    def __and__(self, o: Any) -> NkiTensor: return self._op("bitwise_and", o)
    def __or__(self, o: Any) -> NkiTensor: return self._op("bitwise_or", o)
    def __xor__(self, o: Any) -> NkiTensor: return self._op("bitwise_xor", o)
    def __lt__(self, o: Any) -> NkiTensor: return self._op("less", o)
    def __le__(self, o: Any) -> NkiTensor: return self._op("less_equal", o)
    def __gt__(self, o: Any) -> NkiTensor: return self._op("greater", o)
    def __ge__(self, o: Any) -> NkiTensor: return self._op("greater_equal", o)
    def __eq__(self, o: Any) -> NkiTensor: return self._op("equal", o)  # type: ignore[override]
    def __ne__(self, o: Any) -> NkiTensor: return self._op("not_equal", o)  # type: ignore[override]
    __hash__ = object.__hash__

    def __neg__(self) -> NkiTensor:
        from ..ops.elementwise import operator_call
        return operator_call("multiply", self, -1.0)

    def _inplace(self, name: str, other: Any) -> NkiTensor:
        from ..ops.elementwise import inplace_call
        inplace_call(name, self, other)
        return self

    def __iadd__(self, o: Any) -> NkiTensor: return self._inplace("add", o)
    def __isub__(self, o: Any) -> NkiTensor: return self._inplace("subtract", o)
    def __imul__(self, o: Any) -> NkiTensor: return self._inplace("multiply", o)
    def __itruediv__(self, o: Any) -> NkiTensor: return self._inplace("divide", o)

    # ---- views (current API methods; legacy tile methods reshape/astype/view/broadcast_to) ----
    def _views(self) -> Any:
        from . import views
        return views

    def reshape(self, *shape: Any) -> NkiTensor: return self._views().reshape(self, *shape)
    def permute(self, *dims: Any) -> NkiTensor: return self._views().permute(self, *dims)
    def slice(self, dim: int, start: int = 0, end: int | None = None, step: int = 1) -> NkiTensor:
        return self._views().slice_dim(self, dim, start, end, step)
    def select(self, dim: int, index: Any) -> NkiTensor: return self._views().select(self, dim, index)
    def vector_select(self, dim: int, vector_offset: Any) -> NkiTensor:
        return self._views().vector_select(self, dim, vector_offset)
    def broadcast(self, dim: int, size: int) -> NkiTensor: return self._views().broadcast(self, dim, size)
    def broadcast_to(self, shape: Any) -> NkiTensor: return self._views().broadcast_to(self, shape)
    def expand_dim(self, dim: int) -> NkiTensor: return self._views().expand_dim(self, dim)
    def squeeze_dim(self, dim: int) -> NkiTensor: return self._views().squeeze_dim(self, dim)
    def reshape_dim(self, dim: int, shape: Any) -> NkiTensor: return self._views().reshape_dim(self, dim, shape)
    def flatten_dims(self, start: int = 0, end: int = -1) -> NkiTensor:
        return self._views().flatten_dims(self, start, end)
    def rearrange(self, pattern: str, **sizes: int) -> NkiTensor: return self._views().rearrange(self, pattern, **sizes)
    def view(self, dtype: Any) -> NkiTensor: return self._views().reinterpret(self, dtype)
    reinterpret_cast = view
    def get_pattern(self) -> list[list[int]]: return self._views().get_pattern(self)
    def ap(self, pattern: Any, offset: int | None = None, scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: int = 0, dtype: Any = None) -> NkiTensor:
        return self._views().access_pattern(self, pattern, offset, scalar_offset, vector_offset, indirect_dim, dtype)

    def astype(self, dtype: Any) -> NkiTensor:
        from ..ops.elementwise import copy_as
        return copy_as(self, dtype)


def is_psum(t: Any) -> bool:
    return isinstance(t, NkiTensor) and t.buffer == PSUM
