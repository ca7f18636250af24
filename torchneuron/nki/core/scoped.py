"""A thread-local attribute set for the length of a `with` block."""

from __future__ import annotations

from typing import Any


class scoped:
    """``with scoped(local, name, value):`` sets ``local.<name>`` to ``value`` on this thread, gives back
    ``value``, and restores what was there on exit. A class, not a generator context: it is entered once per
    kernel launch and per op call, where a generator's frame costs more than the work it guards."""

    __slots__ = ("local", "name", "value", "previous")

    def __init__(self, local: Any, name: str, value: Any) -> None:
        self.local = local
        self.name = name
        self.value = value
        self.previous: Any = None

    def __enter__(self) -> Any:
        self.previous = getattr(self.local, self.name, None)
        setattr(self.local, self.name, self.value)
        return self.value

    def __exit__(self, *exc: object) -> None:
        setattr(self.local, self.name, self.previous)
