"""Strict eager mode (``TORCHNEURON_EAGER=lowered``): every eager op on a neuron tensor runs as its own
StableHLO program on XLA:CPU — the Trn host's path minus neuronx-cc.

``install()`` registers ``execute`` as the device layer's eager executor. The warm path (a signature seen
before) skips tracing and lowering entirely: a dict lookup by (op, shapes, dtypes, static arguments) gives
the compiled program. Views, random ops and factory calls return ``NotImplemented`` and run on the host
path; a view is a runtime metadata operation, and the others are judged by the op policy against the
coverage table.
float64 is handled by the device layer before this executor is called (``torchneuron/fp64_rule.py``).
"""

from __future__ import annotations

from typing import Any

from .. import _C, _env
from ..lowering.errors import Unsupported, UnsupportedKind
from . import fallbacks
from .single_op import program_cache


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


def _silent(kind: UnsupportedKind) -> bool:
    """Runtime operations, and random ops: the op policy reports those against the coverage table."""
    return kind.is_runtime_operation or kind is UnsupportedKind.RANDOM


def execute(op: Any, args: tuple, kwargs: dict) -> Any:
    prog, info, values, dyn = program_cache().lookup(op, args, kwargs)
    if isinstance(prog, Unsupported):
        return hand_back(prog, info.name, args, kwargs)
    return prog(info, values, dyn)


def hand_back(prog: Unsupported, name: str, args: tuple, kwargs: dict) -> Any:
    """``NotImplemented``: an op with no program goes back to the device layer, which runs it itself. An op
    with no lowering is reported to the fallback policy first; raises instead when the policy says so
    (``TORCHNEURON_FALLBACK=error``)."""
    if _silent(prog.kind):
        return NotImplemented
    msg = fallbacks.report_fallback(name, prog.why, stacklevel=4)  # hand_back <- an executor <- the user
    if msg is not None:
        raise StrictModeError(f"{msg} (inputs: {_shapes(args, kwargs)})")
    return NotImplemented


def enabled() -> bool:
    return _env.get(_env.EAGER).strip().lower() == "lowered"


def install(on: bool = True) -> None:
    """Install (or with ``on=False`` remove) the strict-mode executor."""
    _C._set_eager_executor(execute if on else None)
