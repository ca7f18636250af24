"""Strict eager mode (``TORCHNEURON_EAGER=lowered``): every eager op on a neuron tensor runs as its own
StableHLO program on XLA:CPU — the Trn host's path minus neuronx-cc.

``install()`` registers ``execute`` as the device layer's eager executor. The warm path (a signature seen
before) skips tracing and lowering entirely: a dict lookup by (op, shapes, dtypes, static arguments) gives
the compiled program. Views, random ops and factory calls return ``NotImplemented`` and run on the host
path; a view is a runtime metadata operation, and the others are reported as fallbacks by the op policy.
"""

from __future__ import annotations

from typing import Any

from .. import _env
from . import coverage
from .single_op import Unsupported, program_cache


class StrictModeError(RuntimeError):
    """An op with no lowering ran in strict mode with ``TORCHNEURON_FALLBACK=error``."""


def _shapes(args: tuple, kwargs: dict) -> str:
    import torch

    parts = []
    for v in [*args, *kwargs.values()]:
        if isinstance(v, torch.Tensor):
            parts.append(f"{str(v.dtype).removeprefix('torch.')}{list(v.shape)}@{v.device}")
        elif isinstance(v, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in v):
            parts.append("[" + ", ".join(f"{str(e.dtype).removeprefix('torch.')}{list(e.shape)}"
                                         for e in v if isinstance(e, torch.Tensor)) + "]")
    return ", ".join(parts)


_SILENT = ("view", "runtime check", "no tensor inputs", "random op")  # runtime operations and the device generator


def execute(op: Any, args: tuple, kwargs: dict) -> Any:
    prog, info, values, dyn = program_cache().lookup(op, args, kwargs)
    if isinstance(prog, Unsupported):
        return fall_back(prog, info.name, args, kwargs)
    return prog(info, values, dyn)


def fall_back(prog: Unsupported, name: str, args: tuple, kwargs: dict) -> Any:
    """``NotImplemented`` (the device layer runs the op itself), after reporting an op with no lowering to the
    coverage policy; raises instead when the policy says so (``TORCHNEURON_FALLBACK=error``)."""
    why = str(prog).removeprefix(f"{name}: ")
    if why.startswith(_SILENT):
        return NotImplemented
    msg = coverage.report_fallback(name, why)
    if msg is not None:
        raise StrictModeError(f"{msg} (inputs: {_shapes(args, kwargs)})")
    return NotImplemented


def enabled() -> bool:
    return _env.get(_env.EAGER).strip().lower() == "lowered"


def install(on: bool = True) -> bool:
    """Install (or with ``on=False`` remove) the strict-mode executor; returns whether the device layer
    accepted it."""
    try:
        from .. import _C  # type: ignore[attr-defined]
    except ImportError:
        return False
    setter = getattr(_C, "_set_eager_executor", None)
    if setter is None:
        return False
    setter(execute if on else None)
    return True
