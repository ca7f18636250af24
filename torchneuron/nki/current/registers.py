"""Virtual registers (32-bit scalars the engines read for dynamic loops and offsets) and their ISA moves."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import data_dependence
from ..core.tensor import NkiTensor
from ..errors import ERR_INVALID_ARG, ERR_SHAPE, fail


def _wrap32(value: Any) -> int:
    """Registers are 32 bits: integers wrap like int32."""
    return (int(value) + 2**31) % 2**32 - 2**31


class VirtualRegister:
    """A 32-bit register. Values are concrete on the simulator, so it converts to int wherever an index
    is expected (`nl.ds(reg, 128)`, slices, `.ap(scalar_offset=reg)`)."""

    def __init__(self, value: Any = 0, frozen: bool = False) -> None:
        self.value = value if isinstance(value, float) else _wrap32(value)
        self.frozen = frozen

    def set(self, value: Any) -> None:
        if self.frozen:
            raise fail(ERR_INVALID_ARG, "a loop induction register is read-only.",
                       "copy it into a register from nisa.register_alloc() before changing it.")
        self.value = value if isinstance(value, float) else _wrap32(value)

    def __int__(self) -> int:
        return int(self.value)

    __index__ = __int__

    def __float__(self) -> float:
        return float(self.value)

    def _v(self, o: Any) -> Any:
        return o.value if isinstance(o, VirtualRegister) else o

    def __add__(self, o: Any) -> Any: return self.value + self._v(o)
    __radd__ = __add__
    def __sub__(self, o: Any) -> Any: return self.value - self._v(o)
    def __rsub__(self, o: Any) -> Any: return self._v(o) - self.value
    def __mul__(self, o: Any) -> Any: return self.value * self._v(o)
    __rmul__ = __mul__
    def __floordiv__(self, o: Any) -> Any: return self.value // self._v(o)
    def __mod__(self, o: Any) -> Any: return self.value % self._v(o)
    def __lt__(self, o: Any) -> bool: return self.value < self._v(o)
    def __le__(self, o: Any) -> bool: return self.value <= self._v(o)
    def __gt__(self, o: Any) -> bool: return self.value > self._v(o)
    def __ge__(self, o: Any) -> bool: return self.value >= self._v(o)
    def __eq__(self, o: Any) -> bool: return self.value == self._v(o)  # type: ignore[override]
    def __hash__(self) -> int: return hash(self.value)
    def __bool__(self) -> bool: return self.value != 0

    def __repr__(self) -> str:
        return f"VirtualRegister({self.value})"


def register_alloc(x: Any = None) -> VirtualRegister:
    if isinstance(x, NkiTensor):
        reg = VirtualRegister()
        register_load(reg, x)
        return reg
    return VirtualRegister(0 if x is None else x)


def register_move(dst: VirtualRegister, src: Any) -> None:
    dst.set(src.value if isinstance(src, VirtualRegister) else src)


def _scalar_tile(t: NkiTensor, api: str) -> None:
    if t.size != 1:
        raise fail(ERR_SHAPE, f"'{api}' moves one value; tensor `{t.name}` has shape {t.shape}.",
                   "pass a [1, 1] view.")


def register_load(dst: VirtualRegister, src: NkiTensor) -> None:
    _scalar_tile(src, "register_load")
    data_dependence.mark()
    value = float(np.asarray(src.read(), dtype=np.float64).reshape(-1)[0]) if not dtypes.is_int(src.dtype) \
        else int(np.asarray(src.read()).reshape(-1)[0])
    # a float register keeps its fraction; whole values load as integers (loop bounds, offsets)
    dst.set(int(value) if isinstance(value, float) and value.is_integer() else value)


def register_store(dst: NkiTensor, src: VirtualRegister) -> None:
    _scalar_tile(dst, "register_store")
    dst.write(dtypes.cast(np.asarray([[src.value]], dtype=np.float64 if isinstance(src.value, float) else np.int64)
                          .reshape(dst.shape), dst.dtype))
