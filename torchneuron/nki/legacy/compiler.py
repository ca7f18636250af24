"""`neuronxcc.nki.compiler`: allocation and scheduling directives. They steer the compiler's placement,
not results, so on the simulator they select the buffer kind and otherwise leave the kernel unchanged
(capacity is still checked from the tiles that are alive)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core.buffers import PSUM, SBUF, Buffer


class _Allocator:
    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer

    def auto_alloc(self, *args: Any, **kwargs: Any) -> Buffer:
        return self.buffer

    def mod_alloc(self, *args: Any, **kwargs: Any) -> Buffer:
        return self.buffer

    def alloc(self, func: Callable[..., Any] | None = None, *args: Any, **kwargs: Any) -> Buffer:
        return self.buffer


sbuf = _Allocator(SBUF)
psum = _Allocator(PSUM)


def _passthrough(func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    return func if func is not None else (lambda f: f)


enable_stack_allocator = force_auto_alloc = skip_middle_end_transformations = _passthrough


def multi_buffer(n: int) -> int:
    return int(n)


@contextmanager
def no_reorder() -> Iterator[None]:
    yield
