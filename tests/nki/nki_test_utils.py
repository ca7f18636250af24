"""Helpers for the NKI tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def line_of(func: Callable[..., Any], marker: str) -> int:
    """The absolute line number of the first source line of `func` containing `marker`."""
    func = getattr(func, "func", func)
    lines, start = inspect.getsourcelines(func)
    for i, text in enumerate(lines):
        if marker in text:
            return start + i
    raise AssertionError(f"marker {marker!r} not in {func.__name__}")
