"""Legacy affine index expressions (`nl.arange`, `nl.mgrid`), the masks built from them, and `nl.ds`.

An affine expression is kept as the integer NumPy array it denotes, so `t[i*128 + i_p, 2*i_f + 1]` is one
vectorised gather and `mask=(i*128 + i_p < n)` one boolean array. Python control flow on these values is
what the compiler rejects, so it raises the documented error instead of guessing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import sys

from ..errors import ERR_ARANGE_CONTROL_FLOW, fail
from . import data_dependence
from . import short_circuit as _short_circuit
from .short_circuit import PENDING as _PENDING


def _values(x: Any) -> Any:
    return x.values if isinstance(x, (IndexArray, Mask)) else x


class IndexArray:
    """An integer index expression over `nl.arange` / `nl.mgrid` / `program_id` values."""

    __array_priority__ = 100  # numpy scalars defer to our operators

    def __init__(self, values: np.ndarray | None, raw_arange: bool = False, runtime: bool = False,
                 affine: tuple[int, int, int] | None = None, shape: tuple[int, ...] | None = None) -> None:
        # values may be left to be made from `affine` and `shape` when first asked for (the strided-view
        # path of an access never needs them)
        self._values = None if values is None else np.asarray(values, dtype=np.int64)
        self._shape = self._values.shape if self._values is not None else tuple(shape or ())
        # A bare `nl.arange(n)` is 1-D: the compiler needs it shaped ([:, None] / [None, :]) to index.
        self.raw_arange = raw_arange
        self.runtime = runtime  # read from an index tile while the kernel runs (indirect access)
        # (axis, start, step) when the values are `start + step * i` along one axis and constant along the
        # others (`k * 128 + i_p`, an mgrid component): indexing with such expressions is a strided view
        # (NkiTensor._affine_gather), not a gather
        self.affine = affine

    @property
    def values(self) -> np.ndarray:
        if self._values is None:
            axis, start, step = self.affine  # type: ignore[misc]
            shape = self._shape
            line = start + step * np.arange(shape[axis], dtype=np.int64)
            self._values = np.broadcast_to(line.reshape([-1 if d == axis else 1 for d in range(len(shape))]), shape)
        return self._values

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def __getitem__(self, key: Any) -> IndexArray:
        return IndexArray(self.values[key], runtime=self.runtime, affine=self._reshaped_affine(key))

    def _reshaped_affine(self, key: Any) -> tuple[int, int, int] | None:
        """The affine form after `[:, None]`-style reshaping (only full slices and new axes keep it)."""
        if self.affine is None:
            return None
        key = key if isinstance(key, tuple) else (key,)
        axis, old = None, 0
        for new, k in enumerate(key):
            if k is None:
                continue
            if not (isinstance(k, slice) and k == slice(None)):
                return None
            if old == self.affine[0]:
                axis = new
            old += 1
        if old != self.ndim or axis is None:
            return None
        return (axis, self.affine[1], self.affine[2])

    def varying(self) -> IndexArray:
        """This expression with every axis it does not vary along cut to length 1. An `nl.mgrid` component
        is dense like NumPy's, but an access depends only on the grid variables its expressions use:
        `t[i_p, k * 1024 + i_f]` with `i_p` from `nl.mgrid[0:128, 0:4096]` and `i_f` from
        `nl.mgrid[0:1, 0:1024]` is a [128, 1024] access (AWS's allocated SD-attention kernel)."""
        if self.affine is not None:
            axis = self.affine[0]
            shape = tuple(n if d == axis else 1 for d, n in enumerate(self._shape))
            return IndexArray(None, runtime=self.runtime, affine=self.affine, shape=shape)
        if self.runtime:  # values read from a tile: equal ones are still one access per element
            return self
        v = self.values
        for d in range(v.ndim):
            if v.shape[d] > 1 and (v == v.take([0], axis=d)).all():
                v = v.take([0], axis=d)
        return IndexArray(v, runtime=self.runtime)

    def _binary(self, other: Any, fn: Any, affine: tuple[int, int, int] | None = None) -> IndexArray:
        if hasattr(other, "storage") and hasattr(other, "read"):  # `i_f + idx_tile[0, b]`: a tile's value
            other = runtime_index(other)
        runtime = self.runtime or bool(getattr(other, "runtime", False))
        if affine is not None:  # `k * 128 + i_p`: the values are made only if something reads them
            return IndexArray(None, runtime=runtime, affine=affine, shape=self._shape)
        return IndexArray(fn(self.values, _values(other)), runtime=runtime, affine=affine)

    def _scaled(self, other: Any, start: Any, step: Any) -> tuple[int, int, int] | None:
        """The affine form of `self op other` for an integer scalar `other`, given how op maps it."""
        if self.affine is None or not isinstance(other, (int, np.integer)) or isinstance(other, bool):
            return None
        a, s0, st = self.affine
        return (a, int(start(s0, int(other))), int(step(st, int(other))))

    def __add__(self, o: Any) -> IndexArray:
        return self._binary(o, np.add, self._scaled(o, lambda s, c: s + c, lambda st, c: st))
    def __radd__(self, o: Any) -> IndexArray:
        return self._binary(o, lambda a, b: b + a, self._scaled(o, lambda s, c: s + c, lambda st, c: st))
    def __sub__(self, o: Any) -> IndexArray:
        return self._binary(o, np.subtract, self._scaled(o, lambda s, c: s - c, lambda st, c: st))
    def __rsub__(self, o: Any) -> IndexArray:
        return self._binary(o, lambda a, b: b - a, self._scaled(o, lambda s, c: c - s, lambda st, c: -st))
    def __mul__(self, o: Any) -> IndexArray:
        return self._binary(o, np.multiply, self._scaled(o, lambda s, c: s * c, lambda st, c: st * c))
    def __rmul__(self, o: Any) -> IndexArray:
        return self._binary(o, lambda a, b: b * a, self._scaled(o, lambda s, c: s * c, lambda st, c: st * c))
    def __floordiv__(self, o: Any) -> IndexArray: return self._binary(o, np.floor_divide)
    def __mod__(self, o: Any) -> IndexArray: return self._binary(o, np.mod)
    def __neg__(self) -> IndexArray:
        if self.affine is not None:
            return IndexArray(None, runtime=self.runtime, affine=(self.affine[0], -self.affine[1], -self.affine[2]),
                              shape=self._shape)
        return IndexArray(-self.values, runtime=self.runtime)
    def __lshift__(self, o: Any) -> IndexArray: return self._binary(o, np.left_shift)
    def __rshift__(self, o: Any) -> IndexArray: return self._binary(o, np.right_shift)

    def _compare(self, other: Any, fn: Any) -> Mask:
        return Mask(fn(self.values, _values(other)))

    def __lt__(self, o: Any) -> Mask: return self._compare(o, np.less)
    def __le__(self, o: Any) -> Mask: return self._compare(o, np.less_equal)
    def __gt__(self, o: Any) -> Mask: return self._compare(o, np.greater)
    def __ge__(self, o: Any) -> Mask: return self._compare(o, np.greater_equal)
    def __eq__(self, o: Any) -> Mask: return self._compare(o, np.equal)  # type: ignore[override]
    def __ne__(self, o: Any) -> Mask: return self._compare(o, np.not_equal)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise fail(ERR_ARANGE_CONTROL_FLOW, "a Python `if`/`while`/`and` depends on an nl.arange expression.",
                   "express the condition as a mask= predicate (combine comparisons with `&`).")

    def __repr__(self) -> str:
        return f"IndexArray(shape={self.shape})"


class Mask:
    """A compile-time predicate: comparisons of index expressions combined with `&`, `|`, `~`, or with
    Python's `and` / `or` (`mask=(i_p < n) and (i_f < m)`), which AWS's tracer accepts as the conjunction /
    disjunction; see `_short_circuit`."""

    def __init__(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.bool_)
        if _PENDING.items:
            values = _short_circuit.combine(values)
        self.values = values

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def __and__(self, o: Any) -> Mask: return Mask(self.values & _values(o))
    __rand__ = __and__
    def __or__(self, o: Any) -> Mask: return Mask(self.values | _values(o))
    __ror__ = __or__
    def __invert__(self) -> Mask: return Mask(~self.values)

    def __bool__(self) -> bool:
        frame = sys._getframe(1)
        kind = _short_circuit.operator_at(frame)
        if kind is None:
            raise fail(ERR_ARANGE_CONTROL_FLOW, "a Python condition depends on an nl.arange comparison.",
                       "pass the comparison as mask= to the nl/nisa call instead of branching on it.")
        # `a and b`: Python evaluates b (True) / `a or b`: Python evaluates b (False); every predicate made
        # while b is evaluated is combined with a, so the expression's value is a & b / a | b
        _short_circuit.defer(frame, kind, self.values)
        return kind == "and"


def arange(*args: int) -> IndexArray:
    r = range(*(int(a) for a in args))
    return IndexArray(np.arange(*args), raw_arange=True, affine=(0, r.start, r.step))


class MGridResult(tuple):
    """`nl.mgrid[0:128, 0:512]`: unpacks to index arrays over the whole grid (dense, like NumPy's mgrid,
    so `nisa.iota(grid.x)` is a full [128, 512] tile); `.p` is the partition index, `.x` the first free
    index (then `.y`, `.z`)."""

    def __getattr__(self, name: str) -> IndexArray:
        order = {"p": 0, "x": 1, "y": 2, "z": 3}
        if name in order and order[name] < len(self):
            return self[order[name]]
        raise AttributeError(name)


class _MGrid:
    def __getitem__(self, key: Any) -> MGridResult:
        key = key if isinstance(key, tuple) else (key,)
        grids = np.mgrid[key] if len(key) > 1 else [np.mgrid[key[0]]]
        affine = []
        for axis, k in enumerate(key):
            r = range(*k.indices(k.stop)) if isinstance(k, slice) and k.stop is not None and \
                all(isinstance(v, (int, np.integer, type(None))) for v in (k.start, k.stop, k.step)) else None
            affine.append(None if r is None else (axis, r.start, r.step))
        return MGridResult(IndexArray(g, affine=a) for g, a in zip(grids, affine))


mgrid = _MGrid()


def ds(start: Any, size: int) -> slice:
    """`nl.ds(start, size)` == `start:start+size`; a register start is read now (the run is eager)."""
    start = int(start)
    return slice(start, start + int(size))


class par_dim:
    """`nl.par_dim(n)` marks the partition dimension in a legacy shape; dims before it are block dims."""

    def __init__(self, size: int) -> None:
        self.size = int(size)

    def __int__(self) -> int:
        return self.size

    def __index__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"par_dim({self.size})"


def split_shape(shape: Any) -> tuple[tuple[int, ...], int]:
    """A shape that may contain `par_dim`, as (plain shape, partition axis)."""
    if type(shape) is tuple:
        for s in shape:
            if type(s) is not int:
                break
        else:  # plain Python ints, the common case
            return shape, 0
    if isinstance(shape, (int, np.integer, par_dim)):
        shape = (shape,)
    plain, axis = [], 0
    for i, s in enumerate(shape):
        if isinstance(s, par_dim):
            axis = i
        plain.append(int(s))
    return tuple(plain), axis


def runtime_index(tile: Any) -> IndexArray:
    """The values of an on-chip index tile (an NkiTensor) as an index expression read while the kernel runs
    (indirect access, or a dynamic offset such as `idx[0, b] + i_f` for nisa.tensor_copy_dynamic_src)."""
    data_dependence.mark()
    return IndexArray(tile.read().astype(np.int64), runtime=True)
