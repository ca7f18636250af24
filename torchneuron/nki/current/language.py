"""`nki.language` (NKI >= 0.3): the shared functions plus buffer predicates, registers-driven loops and
`NKIObject`. No `arange`/`mgrid`/masks: those were removed in 0.2."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core import context as _context
from ..core.ordering import no_reorder  # noqa: F401
from ..core.buffers import Buffer as _Buffer
from ..core.tensor import NkiTensor as _NkiTensor
from ..language_shared import *  # noqa: F403
from ..language_shared import __all__ as _common
from .registers import VirtualRegister


def _buf(x: Any) -> _Buffer:
    return x.buffer if isinstance(x, _NkiTensor) else x


def is_psum(buffer: Any) -> bool:
    return _buf(buffer).name == "psum"


def is_sbuf(buffer: Any) -> bool:
    return _buf(buffer).name == "sbuf"


def is_hbm(buffer: Any) -> bool:
    return _buf(buffer).is_hbm


def is_on_chip(buffer: Any) -> bool:
    return _buf(buffer).on_chip


class NKIObject:
    """Base class for user classes whose instances may be passed around inside kernels."""


def dynamic_range(start: Any, stop: Any = None, step: int = 1) -> Iterator[VirtualRegister]:
    """On-device loop whose bounds may be registers; the induction variable is a frozen register."""
    lo, hi = (0, int(start)) if stop is None else (int(start), int(stop))
    with _dynamic_loop(sys._getframe(1)):  # (the frame iterating this generator: the loop's statement)
        for i in range(lo, hi, int(step)):
            yield VirtualRegister(i, frozen=True)


@contextmanager
def _dynamic_loop(frame: Any) -> Iterator[None]:
    """Marks the instructions issued inside as in the dynamic loop written at `frame`'s line (what
    `depends_on` checks: every iteration and every instance of one loop statement is the same loop)."""
    loops = _context.current().dynamic_loops
    mine = ((frame.f_code, frame.f_lineno), object())
    loops.append(mine)
    try:
        yield
    finally:
        if mine in loops:  # (a loop left with `break` closes its generator later, maybe after an inner one)
            loops.remove(mine)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any], Any], step: int = 1) -> None:
    with _dynamic_loop(sys._getframe(1)):
        for i in range(int(lower), int(upper), int(step)):
            body_fun(VirtualRegister(i, frozen=True))


def while_loop(init: Any, body_fun: Callable[..., Any]) -> None:
    """Run `body_fun` while the condition register is non-zero; the body returns the next condition."""
    takes_arg = len(inspect.signature(body_fun).parameters) > 0
    cond = init
    with _dynamic_loop(sys._getframe(1)):
        while int(cond) != 0:
            cond = body_fun(cond) if takes_arg else body_fun()


def _op_constant(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"nl.{name} is an operator constant for nisa ops, not a function")
    fn._nki_op = name  # type: ignore[attr-defined]
    fn.__name__ = name
    return fn


bypass, average, prelu = _op_constant("bypass"), _op_constant("average"), _op_constant("prelu")

__all__ = [*_common, "is_psum", "is_sbuf", "is_hbm", "is_on_chip", "NKIObject", "dynamic_range", "fori_loop",
           "while_loop", "no_reorder", "bypass", "average", "prelu", "VirtualRegister"]

# `from nki.language.constants import sizeinbytes` (through the import aliases) imports a submodule of this
# module: the import system requires its parent to be a package
from .. import language_constants as constants  # noqa: E402, F401
__path__: list[str] = []
