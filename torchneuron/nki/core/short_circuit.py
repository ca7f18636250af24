"""Python `and` / `or` between legacy mask predicates: `mask=(i_p < n) and (i_f < m)`.

AWS's tracer accepts these as the conjunction / disjunction of the predicates. Python cannot overload
`and`/`or`: it calls `bool(a)` and then evaluates to `b` (or `a`). So `Mask.__bool__` reads the kernel's
bytecode at the call: only the short-circuit jump of an `and`/`or` expression is accepted (an `if`/`while`
on a predicate stays the documented error). The left predicate is then kept here until the right operand
has been evaluated, and every predicate made meanwhile in that frame is combined with it, so the value of
the whole expression is `a & b` (`a | b`).
"""

from __future__ import annotations

import dis
import sys
import threading
from types import CodeType, FrameType
from typing import Any

import numpy as np

_AND = {"JUMP_IF_FALSE_OR_POP"}  # CPython 3.11
_OR = {"JUMP_IF_TRUE_OR_POP"}
_JUMPS: dict[tuple[CodeType, int], tuple[str, int] | None] = {}


class _Pending(threading.local):
    def __init__(self) -> None:
        self.items: list[tuple[FrameType, int, str, np.ndarray]] = []


PENDING = _Pending()


def _instructions(code: CodeType) -> list[dis.Instruction]:
    return list(dis.get_instructions(code))


def _jump_at(frame: FrameType) -> tuple[str, int] | None:
    """("and" | "or", offset where the expression ends) when `frame` is at a short-circuit test."""
    key = (frame.f_code, frame.f_lasti)
    if key in _JUMPS:
        return _JUMPS[key]
    found = None
    ins = _instructions(frame.f_code)
    for i, x in enumerate(ins):
        if x.offset != frame.f_lasti:
            continue
        if x.opname in _AND or x.opname in _OR:
            found = ("and" if x.opname in _AND else "or", int(x.argval))
        elif x.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE") and i >= 2 and ins[i - 1].opname == "TO_BOOL" \
                and ins[i - 2].opname == "COPY":  # CPython 3.12+: COPY 1; TO_BOOL; POP_JUMP_IF_*
            found = ("and" if x.opname == "POP_JUMP_IF_FALSE" else "or", int(x.argval))
        elif x.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE") and i >= 1 and ins[i - 1].opname == "COPY":
            found = ("and" if x.opname == "POP_JUMP_IF_FALSE" else "or", int(x.argval))
        break
    if len(_JUMPS) < 4096:
        _JUMPS[key] = found
    return found


def operator_at(frame: FrameType) -> str | None:
    jump = _jump_at(frame)
    return None if jump is None else jump[0]


def defer(frame: FrameType, kind: str, values: np.ndarray) -> None:
    jump = _jump_at(frame)
    assert jump is not None
    PENDING.items.append((frame, jump[1], kind, values))


def combine(values: np.ndarray) -> Any:
    """A predicate being made: combined with every left operand whose right operand is being evaluated
    (its frame is on the stack, before the end of the expression). Other entries are stale (the
    expression finished, or raised) and are dropped."""
    live = []
    for frame, end, kind, left in PENDING.items:
        if frame.f_lasti >= end or not _on_stack(frame):
            continue
        live.append((frame, end, kind, left))
        values = (left & values) if kind == "and" else (left | values)
    PENDING.items[:] = live
    return values


def _on_stack(frame: FrameType) -> bool:
    f = sys._getframe(2)
    while f is not None:
        if f is frame:
            return True
        f = f.f_back
    return False
