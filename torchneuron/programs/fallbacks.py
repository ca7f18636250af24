"""Fallbacks: ops without a StableHLO lowering, at run time.

Such an op would fall back to the CPU on a Trn host. On the sim it still runs (host path) and is recorded for
``torchneuron.fallback_ops()``. In strict mode (``TORCHNEURON_EAGER=lowered``, the Trn host's path) it is also
warned about once; in the default host mode it is not, since there every op runs the same way and the user
asked for no lowering (``TORCHNEURON_FALLBACK=warn`` warns there too). With ``TORCHNEURON_FALLBACK=error`` it
is refused with a message naming the op and the fix. Whether an op has a lowering is the coverage table's
answer (``torchneuron.lowering.coverage``).

``policy`` is installed into the device layer by ``torchneuron/__init__`` at import time: this module must not
import torch-mlir or jax.
"""

from __future__ import annotations

import threading
import warnings

from .. import _env
from ..lowering import coverage

_lock = threading.Lock()
_fallbacks: dict[str, str] = {}   # op -> reason, in first-seen order
_warned: set[str] = set()


class FallbackWarning(UserWarning):
    """An op with no StableHLO lowering ran on the neuron device (it would fall back to CPU on a Trn host)."""


def reason(op: str) -> str:
    """Why ``op`` has no lowering: the reason recorded when it ran, else the coverage table's."""
    if op in _fallbacks:
        return _fallbacks[op]
    return coverage.reason(op)


def _message(op: str, why: str) -> str:
    return (f"{op} has no StableHLO lowering in torchneuron ({why}); on a Trn host it would fall back to the "
            f"CPU. Avoid the op, or set {_env.FALLBACK}=warn to let it run on the host path.")


def _mode(nrt: bool) -> str:
    """``error`` | ``warn`` | ``record`` (``auto`` resolved: warn in strict mode and on nrt, where the op really
    runs on the CPU; record only in the simulator's host mode)."""
    mode = _env.get(_env.FALLBACK).strip().lower()
    if mode == "auto":
        return "warn" if _env.get(_env.EAGER).strip().lower() == "lowered" or nrt else "record"
    if mode not in ("warn", "error"):
        raise ValueError(f"{_env.FALLBACK}={mode!r}: expected auto, warn or error")
    return mode


def report_fallback(op: str, why: str, stacklevel: int = 3) -> str | None:
    """Record a fallback; warn once (strict mode, nrt, or ``warn``; attributed ``stacklevel`` frames up: the
    user's call) or return the error message (``error``)."""
    with _lock:
        _fallbacks.setdefault(op, why)
        first = op not in _warned
        _warned.add(op)
    nrt = _on_nrt()  # asked once: both the mode and the message depend on it
    mode = _mode(nrt)
    if mode == "error":
        return _message(op, why)
    if first and mode == "warn":
        warnings.warn(f"{op} has no StableHLO lowering ({why}); {_where_it_runs(nrt)}. See torchneuron.fallback_ops(); "
                      f"{_env.FALLBACK}=error makes this an error.", FallbackWarning, stacklevel=stacklevel)
    return None


def _on_nrt() -> bool:
    try:
        from .. import _C  # type: ignore[attr-defined]

        return _C._runtime_target(False) != "" and _C._runtime_info()["runtime"] == "nrt"
    except ImportError:
        return False


def _where_it_runs(nrt: bool) -> str:
    if nrt:
        return "it runs on the CPU (its inputs read from the device, its results written back)"
    return "it runs on the host path here and would fall back to the CPU on a Trn host"


def policy(op: str) -> str | None:
    """The device layer's op policy: called once per distinct op executed on neuron. ``None`` allows it;
    a string refuses it with that message (the device layer appends the input shapes)."""
    if coverage.has_lowering(op):
        return None
    return report_fallback(op, reason(op))


def install_policy() -> None:
    """Install ``policy`` into the device layer (called by ``torchneuron/__init__`` at import)."""
    from .. import _C

    _C._set_op_policy(policy)


def fallback_ops() -> list[str]:
    """Ops executed in this process that have no StableHLO lowering (sorted)."""
    from .. import _C

    seen = set(_fallbacks)
    seen.update(op for op in _C._executed_ops() if not coverage.has_lowering(op))
    return sorted(seen)


def _reset_for_tests() -> None:
    with _lock:
        _fallbacks.clear()
        _warned.clear()
