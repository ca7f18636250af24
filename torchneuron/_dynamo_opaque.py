"""Python entry points Dynamo must never trace, without importing Dynamo in programs that never compile.

Dynamo inlines third-party Python, and also traces a new Python frame that C++ calls back into while a compiled
region runs (the process group's collectives under DDP): tracing into a generator's state or a collective's
device queue fails, warns about pybind functions or bakes a side effect into a graph. ``torch._disable_dynamo``
would do, but imports Dynamo (1.4 s) at the first call of every program.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import torch


def opaque_to_dynamo(fn: Callable) -> Callable:
    """What ``torch._disable_dynamo`` gives, without importing Dynamo (1.4 s) at the first ``torch.manual_seed``
    of every program: a traced caller graph-breaks at the call (``_torchdynamo_disable``), Dynamo never traces
    the wrapper as a frame of its own (its code is marked skipped, as ``torch._dynamo.skip_code`` does, through
    the C API that is loaded with torch), and once Dynamo is loaded ``fn`` runs with Dynamo disabled, so
    nothing it calls is traced either."""
    disabled: list[Callable] = []

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:  # nothing can be tracing
            return fn(*args, **kwargs)
        if not disabled:
            from torch._dynamo import disable

            disabled.append(disable(fn))
        return disabled[0](*args, **kwargs)

    inner._torchdynamo_disable = True  # type: ignore[attr-defined]
    _skip_frames_of(inner.__code__)
    return inner


def _skip_frames_of(code: Any) -> None:
    frames = torch._C._dynamo.eval_frame
    frames.set_code_exec_strategy(code, frames._FrameExecStrategy(frames._FrameAction.SKIP,
                                                                  frames._FrameAction.DEFAULT))


def opaque_methods(cls: type) -> type:
    """``opaque_to_dynamo`` on every public method ``cls`` defines (the entry points C++ calls)."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            setattr(cls, name, type(value)(opaque_to_dynamo(value.__func__)))
        elif callable(value):
            setattr(cls, name, opaque_to_dynamo(value))
    return cls
