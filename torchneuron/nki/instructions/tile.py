"""`Tile`: the tensor class kernels hold. It is the core `NkiTensor` (memory and views) plus what issues
instructions: the current API's view methods, the legacy tile operators (`a + b`, `t += x`, `t[...] = v`),
`.astype`. Every kernel argument is a `Tile`, the launch makes every allocation one
(`KernelRun.tensor_class`), and views of a tile are tiles."""

from __future__ import annotations

from typing import Any

from ..core import views as _views
from ..core.indexing import IndexArray, runtime_index
from ..core.tensor import NkiTensor
from ..errors import ERR_INVALID_ARG, ERR_SHAPE, fail
from .common import assign
from .elementwise import copy_as, inplace_call, operator_call
from .loop_reduce import combine_into


class Tile(NkiTensor):
    __slots__ = ()
    __hash__ = object.__hash__

    # ---- assignment: `tile[...] = value` (the compiler writes the value in place) ----
    def __setitem__(self, key: Any, value: Any) -> None:
        view = self[key]
        if isinstance(value, NkiTensor) and value.storage is view.storage and value.key() == view.key() \
                and value.index is None and view.index is None:
            return  # `t[i] += x` writes in place already, then Python stores the same view back
        if isinstance(value, NkiTensor) and value.storage is view.storage and value.index is not None \
                and view.index is not None and value.shape == view.shape and (value.index == view.index).all():
            return
        if isinstance(value, NkiTensor) and value.storage.loop_reduce is not None:
            combine_into(view, value)  # `acc[...] = nl.loop_reduce(x, op, ...)`: acc = op(acc, x)
            return
        assign(view, value)

    # ---- legacy tile operators (the current API's NkiTensor defines none: they raise there) ----
    def _op(self, name: str, other: Any, reverse: bool = False) -> Any:
        if isinstance(other, IndexArray):  # `idx_tile[0, b] + i_f`: a dynamic offset in an index expression
            return _index_op(name, runtime_index(self), other, reverse)
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

    def __neg__(self) -> NkiTensor:
        return operator_call("multiply", self, -1.0)

    def _inplace(self, name: str, other: Any) -> NkiTensor:
        inplace_call(name, self, other)
        return self

    def __iadd__(self, o: Any) -> NkiTensor: return self._inplace("add", o)
    def __isub__(self, o: Any) -> NkiTensor: return self._inplace("subtract", o)
    def __imul__(self, o: Any) -> NkiTensor: return self._inplace("multiply", o)
    def __itruediv__(self, o: Any) -> NkiTensor: return self._inplace("divide", o)

    def astype(self, dtype: Any) -> NkiTensor:
        return copy_as(self, dtype)

    # ---- legacy `nki.tensor` methods ----
    def assert_shape(self, shape: Any) -> NkiTensor:
        if tuple(int(s) for s in shape) != tuple(self.shape):
            raise fail(ERR_SHAPE, f"tensor `{self.name}` has shape {tuple(self.shape)}, asserted {tuple(shape)}.",
                       "fix the shape the kernel expects, or the tensor passed in.")
        return self

    def expand_dims(self, axis: int) -> NkiTensor:
        return _views.expand_dim(self, axis)

    # ---- views (current API methods; legacy tile methods reshape/view/broadcast_to) ----
    def reshape(self, *shape: Any, **kwargs: Any) -> NkiTensor:
        if "shape" in kwargs:  # `tile.reshape(shape=(...))`, the legacy keyword form
            shape = (kwargs.pop("shape"),)
        if kwargs:
            raise fail(ERR_INVALID_ARG, f"reshape() got unexpected keyword arguments {sorted(kwargs)}.",
                       "pass the new shape: t.reshape((a, b)) or t.reshape(shape=(a, b)).")
        return _views.reshape(self, *shape)

    def permute(self, *dims: Any) -> NkiTensor: return _views.permute(self, *dims)
    def slice(self, dim: int, start: int = 0, end: int | None = None, step: int = 1) -> NkiTensor:
        return _views.slice_dim(self, dim, start, end, step)
    def select(self, dim: int, index: Any) -> NkiTensor: return _views.select(self, dim, index)
    def vector_select(self, dim: int, vector_offset: Any) -> NkiTensor:
        return _views.vector_select(self, dim, vector_offset)
    def broadcast(self, dim: int, size: int) -> NkiTensor: return _views.broadcast(self, dim, size)
    def broadcast_to(self, shape: Any = None, **kwargs: Any) -> NkiTensor:
        return _views.broadcast_to(self, shape if shape is not None else kwargs.pop("shape"))
    def expand_dim(self, dim: int) -> NkiTensor: return _views.expand_dim(self, dim)
    def squeeze_dim(self, dim: int) -> NkiTensor: return _views.squeeze_dim(self, dim)
    def reshape_dim(self, dim: int, shape: Any) -> NkiTensor: return _views.reshape_dim(self, dim, shape)
    def flatten_dims(self, start: int = 0, end: int = -1) -> NkiTensor:
        return _views.flatten_dims(self, start, end)
    def rearrange(self, pattern: str, **sizes: int) -> NkiTensor: return _views.rearrange(self, pattern, **sizes)
    def view(self, dtype: Any) -> NkiTensor: return _views.reinterpret(self, dtype)
    reinterpret_cast = view
    def get_pattern(self) -> list[list[int]]: return _views.get_pattern(self)
    def ap(self, pattern: Any, offset: int | None = None, scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: int = 0, dtype: Any = None) -> NkiTensor:
        return _views.access_pattern(self, pattern, offset, scalar_offset, vector_offset, indirect_dim, dtype)


_INDEX_OPS = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b}


def _index_op(name: str, tile_index: IndexArray, expr: IndexArray, reverse: bool) -> IndexArray:
    fn = _INDEX_OPS.get(name)
    if fn is None:
        raise fail(ERR_INVALID_ARG, f"an index tile and an index expression combined with '{name}'.",
                   "offset an index expression by a tile value with + or - (or scale it with *).")
    return fn(expr, tile_index) if reverse else fn(tile_index, expr)
