"""Which custom ops are NKI ops, and the Python functions behind them.

``torch.compile(backend="neuron")`` asks here whether an FX node is an NKI op (it then runs the kernel on the
simulator between compiled pieces, or becomes a custom call on a Trn host).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_OPS: dict[str, Callable[..., Any]] = {}  # "ns::name" -> the function the op runs


def add(name: str, fn: Callable[..., Any]) -> None:
    _OPS[name] = fn


def function(name: str) -> Callable[..., Any] | None:
    return _OPS.get(name)


def names() -> list[str]:
    return sorted(_OPS)


def op_of(target: Any, args: tuple[Any, ...] = ()) -> str | None:
    """The NKI op an FX node's target calls ("ns::name"), or None. Mutating ops appear inside AOTAutograd's
    graphs wrapped in ``auto_functionalized``, whose first argument is the op."""
    import torch

    if isinstance(target, torch._ops.HigherOrderOperator):
        if target.__name__.startswith("auto_functionalized") and args:
            return op_of(args[0])
        return None
    if isinstance(target, torch._ops.OpOverload):
        name = target.name()
        name = name.split(".")[0]  # "ns::name.overload" -> "ns::name"
        return name if name in _OPS else None
    return None
