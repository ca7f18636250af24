"""`NkiTensor`: a view (shape, strides, offset) or a gather (an array of offsets) into one `Storage`.

Element address = offset + sum(strides[k] * i[k]), exactly the access-pattern model of the current NKI API,
so slicing, `.ap(...)`, permutes and broadcasts are free views and every read or write is one NumPy
operation on the whole tile. Legacy affine-index accesses (`t[i_p, 2*i_f+1]`) become gathers whose bounds
are checked when an instruction uses them, because only then is the instruction's `mask=` known.

This is the memory model only: views, reads and writes. Instructions, Python operators and assignment are
built on it in `instructions` (`instructions.tile.Tile`); every view keeps the class of the tensor it was taken from.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from ..errors import (
    ERR_1D_ARANGE,
    ERR_MIXED_INDEXING,
    ERR_OOB,
    ERR_SHAPE,
    ERR_TRUTH_VALUE,
    fail,
)
from .buffers import Buffer, Storage
from .indexing import IndexArray, Mask, MGridResult, runtime_index


_ROW_MAJOR: dict[tuple[int, ...], tuple[int, ...]] = {}  # a kernel allocates the same few shapes over and over


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out = _ROW_MAJOR.get(shape)
    if out is not None:
        return out
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    out = tuple(reversed(strides))
    if len(_ROW_MAJOR) < 4096:
        _ROW_MAJOR[tuple(int(s) for s in shape)] = out
    return out


_BYTE_STRIDES: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}


def strided(data: np.ndarray, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """The view of flat `data` with an element offset and element strides (no copy). Built with the
    ndarray constructor over data's buffer: a quarter of as_strided's cost, and ml_dtypes types survive."""
    if 0 in shape:
        return np.empty(shape, data.dtype)  # nothing to address
    if (_ROW_MAJOR.get(shape) or row_major_strides(shape)) == strides:
        # a contiguous run (`data` is flat): slicing and reshaping costs a third of the constructor
        n = math.prod(shape)
        return data.reshape(shape) if offset == 0 and n == data.size else data[offset:offset + n].reshape(shape)
    item = data.itemsize
    key = (strides, item)
    byte_strides = _BYTE_STRIDES.get(key)
    if byte_strides is None:
        byte_strides = tuple(s * item for s in strides)
        if len(_BYTE_STRIDES) < 4096:
            _BYTE_STRIDES[key] = byte_strides
    return np.ndarray(shape, data.dtype, buffer=data, offset=offset * item, strides=byte_strides)


class Bound(NamedTuple):
    """A gathered dimension: its indices, the dimension's size, and whether the indices are runtime
    values (an index tile: an indirect DMA) or the affine expressions the compiler sees (`nl.arange`)."""

    dim: int
    indices: np.ndarray
    size: int
    runtime: bool = False


def oob(name: str, dim: int, lo: int, hi: int, size: int) -> Exception:
    return fail(ERR_OOB, f"Out-of-bound access for tensor `{name}` on dimension {dim}: index range "
                f"[{lo}, {hi}] exceed dimension size of {size}.",
                "keep indices inside the tensor, or guard the tail tile with a mask= predicate / smaller slice.")


class NkiTensor:
    """A tensor in HBM, SBUF or PSUM as a kernel sees it."""

    # dtype, buffer, ndim and free_size are fixed by the storage and shape: plain attributes, since every
    # operand check and cost estimate asks for them
    __slots__ = ("storage", "shape", "strides", "offset", "pdim", "index", "bounds", "size", "partitions", "checked",
                 "_views", "_data_src", "_data_view", "dtype", "buffer", "ndim", "free_size")
    __array_priority__ = 100  # `np_scalar * tile` uses our operators

    def __init__(self, storage: Storage, shape: tuple[int, ...], strides: tuple[int, ...] | None, offset: int,
                 pdim: int | None = 0, index: np.ndarray | None = None, bounds: tuple[Bound, ...] = ()) -> None:
        self.storage = storage
        self.shape = shape = shape if type(shape) is tuple else tuple(int(s) for s in shape)
        self.strides = strides
        self.offset = int(offset)
        self.pdim = pdim
        self.index = index          # gather views: flat offsets, shape == self.shape
        self.bounds = bounds        # gather bounds, checked when an instruction uses the view
        self.size = size = math.prod(shape)
        self.partitions = partitions = shape[pdim] if pdim is not None and shape else 1
        self.checked = 0            # the partition limit an operand check passed for (instructions.common)
        # strided views of the storage arrays: the first one asked for (nearly always the values) in a
        # slot, any other (written) by id
        self._data_src: np.ndarray | None = None
        self._data_view: np.ndarray | None = None
        self._views: dict[int, np.ndarray] | None = None
        self.dtype: np.dtype = storage.dtype
        self.buffer: Buffer = storage.buffer
        self.ndim = len(shape)
        self.free_size = size // (partitions or 1)

    @classmethod
    def _strided_view(cls, storage: Storage, shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
                      pdim: int | None, partitions: int, size: int) -> NkiTensor:
        """What __init__ makes of a strided view (no gather) whose fields the caller already knows: whole
        allocations and 2-D range views, most of a kernel's tensors, skip its conversions and products."""
        t = cls.__new__(cls)
        t.storage = storage
        t.shape = shape
        t.strides = strides
        t.offset = offset
        t.pdim = pdim
        t.index = None
        t.bounds = ()
        t.size = size
        t.partitions = partitions
        t.checked = 0
        t._data_src = t._data_view = t._views = None
        t.dtype = storage.dtype
        t.buffer = storage.buffer
        t.ndim = len(shape)
        t.free_size = size // (partitions or 1)
        return t

    @classmethod
    def whole(cls, storage: Storage) -> NkiTensor:
        """The whole allocation (every allocation and kernel argument), from what the storage knows already."""
        shape = storage.shape
        strides = _ROW_MAJOR.get(shape) or row_major_strides(shape)
        if storage.buffer.on_chip:
            return cls._strided_view(storage, shape, strides, 0, storage.partition_axis, storage.partitions,
                                     storage.size)
        return cls._strided_view(storage, shape, strides, 0, 0, shape[0] if shape else 1, storage.size)

    def derive(self, shape: tuple[int, ...], strides: tuple[int, ...] | None, offset: int, pdim: int | None = 0,
               index: np.ndarray | None = None, bounds: tuple[Bound, ...] = (),
               storage: Storage | None = None) -> NkiTensor:
        """Another view of the same storage (or of `storage`), of this tensor's class."""
        return type(self)(storage or self.storage, shape, strides, offset, pdim, index, bounds)

    # ---- properties ----
    @property
    def name(self) -> str:
        return self.storage.name

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def is_gather(self) -> bool:
        return self.index is not None

    def key(self) -> tuple[Any, ...]:
        """What identifies this view of its storage."""
        return (self.offset, self.shape, self.strides, self.pdim)

    def __repr__(self) -> str:
        return f"NkiTensor({self.name}, shape={self.shape}, dtype={dtypes.name(self.dtype)}, {self.buffer!r})"

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        if self.buffer.is_hbm:
            # `if bias:` on an optional HBM kernel argument (None or a tensor) is a host-side test of whether
            # the argument was passed, as AWS's tracer evaluates it; only on-chip values are ambiguous
            return True
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

    def covers_storage(self) -> bool:
        """Whether this strided view is every element of its storage in row-major order (the storage's flat
        arrays, as they are, are then this view's)."""
        shape = self.storage.shape
        return self.offset == 0 and self.shape == shape and self.strides == (_ROW_MAJOR.get(shape)
                                                                             or row_major_strides(shape))

    def view_of(self, data: np.ndarray) -> np.ndarray:
        """This view over one of the storage's flat arrays (data, written); made once."""
        if self._data_src is data:
            return self._data_view  # type: ignore[return-value]
        if self._data_src is None:
            v = self._data_view = strided(data, self.offset, self.shape, self.strides or ())
            self._data_src = data
            return v
        views = self._views
        if views is None:
            views = self._views = {}
        v = views.get(id(data))
        if v is None:
            v = views[id(data)] = strided(data, self.offset, self.shape, self.strides or ())
        return v

    def check_bounds(self, mask: np.ndarray | None = None) -> None:
        for b in self.bounds:
            idx = b.indices
            live = idx if mask is None else idx[np.broadcast_to(mask, idx.shape)] if idx.shape else idx
            bad = (live < 0) | (live >= b.size)
            if np.any(bad):
                raise oob(self.name, b.dim, int(live.min()), int(live.max()), b.size)

    def safe_index(self, mask: np.ndarray | None) -> np.ndarray:
        self.check_bounds(mask)
        if mask is None or not self.bounds:
            return self.index  # type: ignore[return-value]
        return np.where(np.broadcast_to(mask, self.shape), self.index, 0)

    def read(self, mask: np.ndarray | None = None) -> np.ndarray:
        """The values in storage dtype (masked-off gather elements read element 0 instead of faulting)."""
        st = self.storage
        if st.pending is not None:
            st.flush()
        data = st._data if st._data is not None else st.data
        if self.index is None:
            return self.view_of(data)
        return data[self.safe_index(mask)]

    def read_compute(self, mask: np.ndarray | None = None) -> np.ndarray:
        """The values as the engines compute with them: fp32. Never mutate the result (it may be the
        storage itself, or a conversion kept until the storage is next written)."""
        st = self.storage
        if st.pending is not None:
            st.flush()
        data = st._data if st._data is not None else st.data
        if data.dtype == np.float32:
            return self.view_of(data) if self.index is None else data[self.safe_index(mask)]
        if self.index is not None:
            return data[self.safe_index(mask)].astype(np.float32)
        key = self.key()
        values = st.compute_copy(key)
        if values is None:
            values = self.view_of(data).astype(np.float32)
            st.remember_compute_copy(key, values)
        return values

    def write(self, values: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Store already-cast `values` (broadcast to this view) where `mask` holds. Bookkeeping: outputs
        and PSUM remember what was written; a PSUM element that holds a value is no longer fresh, so the
        next `accumulate=None` matmul adds to it until another engine reads it."""
        st = self.storage
        if st.pending is not None:
            st.flush()
        st._compute = None
        if self.index is None:
            if mask is None:
                # the layout test only where it decides something: a first write, or written flags to set;
                # an SBUF tile's later writes skip it
                whole = (st._data is None or st.written is not None) and self.covers_storage()
                if st._data is None and whole:
                    self._first_whole_write(st, values)
                else:
                    self.view_of(st.data)[...] = values
                if st.written is not None:
                    self._set_all(st.written, True, whole)
                return
            where = np.broadcast_to(mask, self.shape)
            np.copyto(self.view_of(st.data), values, where=where)
            if st.written is not None:
                np.copyto(self.view_of(st.written), True, where=where)
            return
        values = np.broadcast_to(values, self.shape)
        idx = self.safe_index(mask)
        if mask is not None:
            keep = np.broadcast_to(mask, self.shape)
            idx, values = idx[keep], values[keep]
        st.data[idx] = values
        if st.written is not None:
            st.written[idx] = True

    def _first_whole_write(self, st: Storage, values: Any) -> None:
        """A tile's first instruction usually writes all of it: then nothing can read the NaN / 4 sentinel,
        and filling the new storage with it first is wasted."""
        dt = dtypes.storage_dtype(st.dtype)
        if type(values) is np.ndarray and values.shape == self.shape and values.dtype == dt:
            # already the tile's values in its dtype: a C-ordered copy is its memory (the bytes copying them
            # into np.empty would give, one NumPy call instead of three)
            own = values.copy()
            st._data = own.reshape(-1)
            if self._data_src is None:
                self._data_src, self._data_view = st._data, own
        else:
            st._data = np.empty(self.size, dtype=dt)
            self.view_of(st._data)[...] = values

    def _set_all(self, flat: np.ndarray, value: bool, whole: bool) -> None:
        """Sets one of the storage's flag arrays over this view: flat when the view is the whole storage."""
        if whole:
            flat.fill(value)
        else:
            self.view_of(flat)[...] = value

    def written_values(self) -> np.ndarray:
        """Which elements of this view have ever been written (HBM outputs and PSUM)."""
        written = self.storage.written
        assert written is not None
        return self.view_of(written) if self.index is None else written[self.index]

    def numpy(self) -> np.ndarray:
        return np.array(self.read())

    # ---- indexing ----
    def __getitem__(self, key: Any) -> NkiTensor:
        if type(key) is MGridResult:  # `t[nl.mgrid[0:128, 0:512]]`: the grid is the full index
            key = tuple(key)
        if self.index is None:
            if type(key) is tuple and len(key) == 2 and self.ndim == 2:
                view = self._two_ranges(key)
                if view is not None:
                    return view
            if key is Ellipsis:  # `t[...]`, the legacy whole-tile access: every dimension whole
                return self._basic(())
            plain = key if type(key) is tuple else (key,)
            for k in plain:
                kind = type(k)
                if kind is not slice and kind is not int:
                    break
            else:  # slices and integers only, the common case: nothing to normalise
                if len(plain) > self.ndim:
                    self._normalise_key(plain)  # raises the too-many-indices error
                return self._basic(plain)
            if type(key) is tuple and len(key) == self.ndim:
                view = self._affine_view(key)
                if view is not None:
                    return view
        key = self._normalise_key(key)
        if self.index is not None:
            return self._index_gather(key)
        if any(isinstance(k, IndexArray) for k in key):
            return self._affine_gather(key)
        return self._basic(key)

    def _affine_view(self, key: tuple[Any, ...]) -> NkiTensor | None:
        """`t[bk, i.p, bm * 128 + i.x]` (the legacy tutorials' indexing): integers and compile-time affine
        expressions, each stepping along its own axis in the tensor's dimension order, are the strided view
        `_affine_as_slices` finds, without building the expressions' varying forms first. None for anything
        else, which then takes the general path (and its errors)."""
        nd = 0
        for k in key:
            if type(k) is IndexArray:
                if k.affine is None or k.runtime or k.raw_arange:
                    return None
                if k.ndim > nd:
                    nd = k.ndim
            elif type(k) is not int:
                return None
        basic: list[Any] = []
        shape = [1] * nd
        axis = -1
        for size, k in zip(self.shape, key):
            if type(k) is int:
                basic.append(k)
                continue
            along, start, step = k.affine
            a = along + nd - k.ndim
            if a <= axis:
                return None
            axis = a
            n = shape[a] = k.shape[along]
            if n == 1:
                step = 1
            last = start + step * (n - 1)
            if step <= 0 or start < 0 or last >= size:
                return None
            basic.append(slice(start, last + 1, step))
        view = self._basic(tuple(basic))
        return view if view.shape == tuple(shape) else None

    def _normalise_key(self, key: Any) -> tuple[Any, ...]:
        key = key if type(key) is tuple else (key,)
        out: list[Any] = []
        for k in key:
            kind = type(k)
            if kind is slice or kind is int:
                out.append(k)
                continue
            if isinstance(k, NkiTensor):  # indirect: an on-chip index tile, known only when the kernel runs
                k = runtime_index(k)
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

    def _two_ranges(self, key: tuple[Any, Any]) -> NkiTensor | None:
        """`t[a:b, c:d]` on a 2-D view (most of a kernel's indexing): what `_basic` computes for two step-1
        slices of Python ints, or None for anything else (then `_basic` handles it, errors included)."""
        k0, k1 = key
        if type(k0) is not slice or type(k1) is not slice or k0.step is not None or k1.step is not None:
            return None
        n0, n1 = self.shape
        a0, b0, a1, b1 = k0.start, k0.stop, k1.start, k1.stop
        a0 = 0 if a0 is None else a0
        a1 = 0 if a1 is None else a1
        b0 = n0 if b0 is None else b0
        b1 = n1 if b1 is None else b1
        if type(a0) is not int or type(b0) is not int or type(a1) is not int or type(b1) is not int \
                or not 0 <= a0 <= b0 <= n0 or not 0 <= a1 <= b1 <= n1:
            return None  # negative bounds, other index types, out of range
        s0, s1 = self.strides  # type: ignore[misc]
        pdim = self.pdim if self.buffer.on_chip else 0
        shape = (b0 - a0, b1 - a1)
        return self._strided_view(self.storage, shape, (s0, s1), self.offset + a0 * s0 + a1 * s1, pdim,
                                  shape[pdim] if pdim is not None else 1, shape[0] * shape[1])

    def _basic(self, key: tuple[Any, ...]) -> NkiTensor:
        """Slices and integers. An integer drops its dimension, except that a result stays at least 2-D
        (the last integer dims are kept, size 1: `A[0:128, i]` is a (128, 1) column) and, on chip, the
        partition dimension is never dropped."""
        shape, strides, offset = [], [], self.offset
        droppable: list[int] = []  # result positions of integers that may be dropped
        over: list[tuple[int, int, int, int, int]] = []  # (position, dim, start, step, size) of slices past the end
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
                if on_chip and dim == self.pdim:
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
                if start < 0 or start > stop or (stop > size and (start >= size or self.buffer.on_chip)):
                    raise oob(self.name, dim, start, stop - 1, size)
                if stop > size:  # a tail tile running past an HBM tensor: legal where the access's mask= cuts it
                    over.append((len(shape), dim, start, step, size))
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
        if droppable:
            keep = set()
            if self.ndim >= 2:
                while droppable and len(shape) - len(droppable) < 2:
                    keep.add(droppable.pop())
            for p in reversed(droppable):  # increasing positions: delete from the back
                if p in keep:
                    continue
                del shape[p]
                del strides[p]
                if pdim is not None and pdim > p:
                    pdim -= 1
                over = [(q - 1 if q > p else q, d, a, st, n) for q, d, a, st, n in over]
        if not on_chip:
            pdim = 0
        if over:
            return self._bounded_slices(tuple(shape), tuple(strides), offset, over)
        return self.derive(tuple(shape), tuple(strides), offset, pdim)

    def _bounded_slices(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
                        over: list[tuple[int, int, int, int, int]]) -> NkiTensor:
        """`hbm[128:256]` on a 160-row tensor: the view as a gather whose out-of-range rows are checked when
        an instruction accesses it, under its mask= (AWS's compiler accepts a tail tile whose mask keeps
        the access inside the tensor; without a mask it is the documented out-of-bound error)."""
        index = np.full(shape, offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(shape, strides)):
            index = index + (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
        bounds = []
        for pos, dim, start, step, size in over:
            vals = (start + step * np.arange(shape[pos], dtype=np.int64)).reshape(
                (shape[pos],) + (1,) * (len(shape) - pos - 1))
            bounds.append(Bound(dim, np.broadcast_to(vals, shape), size))
        return self.derive(shape, None, 0, 0, index=index, bounds=tuple(bounds))

    def _affine_gather(self, key: tuple[Any, ...]) -> NkiTensor:
        if any(isinstance(k, slice) or k is None for k in key):
            raise fail(ERR_MIXED_INDEXING, f"tensor `{self.name}` is indexed with both slices and "
                       "nl.arange expressions.", "index every dimension with nl.arange/mgrid expressions "
                       "(or integers), or every dimension with slices.")
        if len(key) < self.ndim and all(type(k) is int or (isinstance(k, IndexArray) and k.values.size == 1)
                                        for k in key):
            key = self._whole_rest(key)
        if len(key) != self.ndim:
            raise fail(ERR_SHAPE, f"tensor `{self.name}` of rank {self.ndim} indexed with {len(key)} "
                       "expressions.", "give one index expression per dimension.")
        arrays = [k for k in key if isinstance(k, IndexArray)]
        if self.ndim > 1 and any(a.raw_arange and a.ndim == 1 and a.shape[0] > 1 for a in arrays):
            raise fail(ERR_1D_ARANGE, "a 1-D nl.arange indexes a multi-dimensional tensor.",
                       "give it a dimension, e.g. nl.arange(128)[:, None] for partitions and "
                       "nl.arange(512)[None, :] for the free dimension.")
        # an access spans the grid variables its expressions use, not the extent of each dense grid
        # (`t[i_p, k]` with i_p from nl.mgrid[0:128, 0:8] is [128, 1]): see IndexArray.varying
        key = tuple(k.varying() if isinstance(k, IndexArray) else k for k in key)
        arrays = [k for k in key if isinstance(k, IndexArray)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        view = self._affine_as_slices(key, shape)
        if view is not None:
            return view
        index = np.full(shape, self.offset, dtype=np.int64)
        bounds = []
        for dim, k in enumerate(key):
            stride = self.strides[dim]  # type: ignore[index]
            if isinstance(k, IndexArray):
                vals = np.broadcast_to(k.values, shape)
                bounds.append(Bound(dim, vals, self.shape[dim], k.runtime))
                index = index + vals * stride
            else:
                i = k + self.shape[dim] if k < 0 else k
                if not 0 <= i < self.shape[dim]:
                    raise oob(self.name, dim, k, k, self.shape[dim])
                index = index + i * stride
        return self.derive(shape, None, 0, 0, index=index, bounds=tuple(bounds))

    def _whole_rest(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """`t[i]` with `i` one value read from a tile (a dynamic loop counter, `hbm[loop_index[0, 0]]` in
        AWS's paged-attention kernels) indexes like an integer: the dimensions it does not name are taken
        whole. Each becomes an arange along its own axis of the result, and the scalar indices 0-d."""
        rest = self.shape[len(key):]
        head = tuple(IndexArray(k.values.reshape(()), runtime=k.runtime) if isinstance(k, IndexArray) else k
                     for k in key)
        whole = tuple(IndexArray(None, affine=(axis, 0, 1), shape=tuple(n if d == axis else 1
                                                                        for d, n in enumerate(rest)))
                      for axis, n in enumerate(rest))
        return head + whole

    def _affine_as_slices(self, key: tuple[Any, ...], shape: tuple[int, ...]) -> NkiTensor | None:
        """`t[k * 128 + i.p, m * 512 + i.x]` (the legacy tutorials' indexing): when every expression steps
        along its own axis, in the tensor's dimension order, and stays inside the tensor, the access is the
        strided view of the equivalent slices (no per-element index array: the fast path every view
        takes), as the compiler's access pattern is. Anything else (transposing, runtime or non-affine
        indices, a tail past the end that the access's mask must cut) stays a gather."""
        basic: list[Any] = []
        axis = -1
        nd = len(shape)
        for dim, k in enumerate(key):
            if not isinstance(k, IndexArray):
                basic.append(k)
                continue
            aff = k.affine
            if aff is None or k.runtime:
                return None
            a = aff[0] + nd - k.ndim  # broadcasting aligns on the right
            if a <= axis:
                return None
            axis = a
            n = shape[a]
            if k.shape[aff[0]] != n:
                return None
            start, step = aff[1], aff[2] if n > 1 else 1
            last = start + step * (n - 1)
            if step <= 0 or start < 0 or last >= self.shape[dim]:
                return None
            basic.append(slice(start, last + 1, step))
        # the result's other axes are 1 (an integer's, or an expression's constant ones: `t[i_p, 0]` with
        # i_p = nl.arange(128)[:, None]); the slices' view has them where the integers keep theirs
        view = self._basic(tuple(basic))
        return view if view.shape == tuple(shape) else None

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
        return self.derive(flat.shape, None, 0, 0, index=offsets)


def is_psum(t: Any) -> bool:
    return isinstance(t, NkiTensor) and t.buffer.name == "psum"
