"""What the current `nki.isa` operations return: a handle on the instructions one call issued. Its
`depends_on` adds an ordering edge that the cost model's scheduler honours (`core.room.replay`); values are
computed in program order either way, so an edge never changes a result."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import context
from ..enums import dependency
from ..errors import ERR_INVALID_ARG, fail


class NkiInstruction:
    """Opaque handle to the instructions one `nki.isa` call issued (log entries `first` to `last - 1` of
    its kernel instance; empty when the launch keeps no cost model)."""

    __slots__ = ("_run", "_first", "_last", "name", "_loops")

    def __init__(self, run: Any, first: int, last: int, name: str | None) -> None:
        self._run, self._first, self._last, self.name = run, first, last, name
        self._loops = tuple(site for site, _ in run.dynamic_loops)  # the loop statements it is inside

    def depends_on(self, *producers: NkiInstruction, kind: dependency | None = None) -> NkiInstruction:
        """Run this instruction after each producer: `dependency.runtime` (the default, as before `kind`
        existed) waits for the producer to finish; `dependency.schedule` only keeps the issue order."""
        kind = dependency.runtime if kind is None else kind
        if not isinstance(kind, dependency):
            raise fail(ERR_INVALID_ARG, f"depends_on(kind={kind!r}): not a nki.isa.dependency.",
                       "pass kind=nisa.dependency.runtime or kind=nisa.dependency.schedule.")
        for p in producers:
            if not isinstance(p, NkiInstruction):
                raise fail(ERR_INVALID_ARG, f"depends_on({p!r}): a producer must be what a nki.isa call returned.",
                           "keep the handle the producing nisa call returns and pass it.")
            if p._run is not self._run:
                raise fail(ERR_INVALID_ARG, "depends_on: the producer was issued by another kernel instance.",
                           "wire dependencies between instructions of one kernel launch.")
            if kind is dependency.runtime and p._loops != self._loops[:len(p._loops)]:
                raise fail(ERR_INVALID_ARG, f"depends_on: {self._label()} and {p._label()} are in different "
                           "dynamic loops; a runtime dependency fires unconditionally, so both must sit at the same "
                           "dynamic-loop nesting (or the producer in an enclosing scope).",
                           "move the edge inside the loop, or use kind=nisa.dependency.schedule.")
            self._run.edges.append((self._first, self._last, p._first, p._last, kind))
        return self

    def _label(self) -> str:
        return f"instruction {self.name!r}" if self.name else "the instruction"

    def __repr__(self) -> str:
        return f"<NkiInstruction {self.name or ''}>".replace(" >", ">")


@contextmanager
def no_reorder() -> Iterator[None]:
    """`nl.no_reorder()` (legacy `ncc.no_reorder()`): the instructions inside keep program order on their
    engines; the cost model's scheduler does not move them into idle time left before an earlier instruction
    (execution here is always in program order)."""
    run = context.current()
    run.in_order += 1
    try:
        yield
    finally:
        run.in_order -= 1


def returns_instruction(fn: Callable[..., None]) -> Callable[..., NkiInstruction]:
    """Wraps a `nki.isa` operation so that it returns the handle of what it issued (and records its `name=`
    for `kernel.with_schedule`)."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> NkiInstruction:
        run = context.current()
        first = len(run.log)
        fn(*args, **kwargs)
        handle = NkiInstruction(run, first, len(run.log), kwargs.get("name"))
        if handle.name:
            run.named.setdefault(handle.name, []).append(handle)
        return handle
    return op


def add_schedule_edges(run: Any, schedule: tuple) -> None:
    """`kernel.with_schedule(edges)`: each instruction named first in a pair is issued after those named second
    (`dependency.schedule`). A name issued several times (in a loop) pairs each instance with the producer's
    latest instance issued before it, or its first when none was."""
    for consumer, producers in schedule:
        for name in (consumer, *producers):
            if name not in run.named:
                raise fail(ERR_INVALID_ARG, f"with_schedule names instruction {name!r}, which the kernel did not issue "
                           f"(named instructions: {sorted(run.named) or 'none'}).",
                           "pass name=... to the nki.isa call, and the same name to with_schedule.")
        for handle in run.named[consumer]:
            for name in producers:
                earlier = [p for p in run.named[name] if p._first < handle._first]
                handle.depends_on(earlier[-1] if earlier else run.named[name][0], kind=dependency.schedule)
