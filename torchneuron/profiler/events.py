"""Recording neuron device events from Python: compiled graph pieces, NKI kernel launches, anything that
runs on a neuron device outside the eager host path (which records its ops in C++).

    from torchneuron.profiler import device_event

    with device_event("mylib::flash_fwd", x.device, kind="kernel", cost=lambda: (est_ns, {"flops": f})):
        run_kernel(...)

Outside a ``torch.profiler`` session that records ``ProfilerActivity.PrivateUse1`` this costs one check
and records nothing. Inside one, the event lands on the device's row for the current stream
(``neuron:N stream S``) with the measured time, the estimate (``est_trn_us``) and the metadata, and is
linked to the innermost CPU op or ``record_function`` range on the calling thread, which gets its time
as device time in ``key_averages()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch

from .. import _C

Cost = Callable[[], "tuple[float | None, dict[str, Any]]"]


def recording() -> bool:
    """True while a profiler session records neuron device activity."""
    return _C._profiler_recording()


def now_ns() -> int:
    """The clock device events are stamped with (unix-epoch ns, the clock of the profiler's CPU events)."""
    return _C._profiler_now_ns()


def _index(device: torch.device | str | int) -> int:
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != "neuron":
        raise ValueError(f"torchneuron.profiler: device events belong to a neuron device, got {d}")
    return d.index if d.index is not None else torch.neuron.current_device()


def record_device_event(name: str, device: torch.device | str | int, start_ns: int, end_ns: int, *,
                        kind: str = "kernel", stream: int | None = None, estimated_ns: float | None = None,
                        metadata: dict[str, Any] | None = None) -> None:
    """Record one finished device event (times from ``now_ns()``). ``kind`` is "kernel", "graph", "op" or
    "copy"; ``stream`` defaults to the device's current stream; ``metadata`` values must be JSON-serialisable
    (they appear in the trace's args)."""
    if not recording():
        return
    index = _index(device)
    if stream is None:
        stream = torch.neuron.current_stream(index).stream_id
    meta = [(str(k), json.dumps(v)) for k, v in (metadata or {}).items()]
    _C._record_device_activity(kind, name, index, int(stream), int(start_ns), int(end_ns),
                               -1.0 if estimated_ns is None else float(estimated_ns), meta)


class _Inactive:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_INACTIVE = _Inactive()


class _DeviceEvent:
    def __init__(self, name: str, device: torch.device | str | int, kind: str, cost: Cost | None, cpu_range: bool):
        self.name, self.kind, self.cost = name, kind, cost
        self.index = _index(device)
        self.range = torch.autograd.profiler.record_function(name) if cpu_range else None
        self.start = 0
        self.estimated: float | None = None
        self.metadata: dict[str, Any] = {}

    def __enter__(self) -> None:
        # Estimated before the range opens: the cost model's own time is not the work's.
        self.estimated, self.metadata = self.cost() if self.cost is not None else (None, {})
        if self.range is not None:
            self.range.__enter__()
        self.start = now_ns()

    def __exit__(self, exc_type, exc, tb) -> None:
        end = now_ns()
        try:
            if exc_type is None:
                record_device_event(self.name, self.index, self.start, end, kind=self.kind,
                                    estimated_ns=self.estimated, metadata=self.metadata)
        finally:
            if self.range is not None:
                self.range.__exit__(exc_type, exc, tb)


def device_event(name: str, device: torch.device | str | int, *, kind: str = "kernel", cost: Cost | None = None,
                 cpu_range: bool = True):
    """Context manager timing the work it encloses as one device event on ``device``.

    ``cost`` is called once per recorded event (never when nothing records) and returns
    ``(estimated_ns, metadata)``: the estimated Trainium time (None if unknown) and JSON-serialisable facts
    such as ``{"flops": ..., "bytes": ..., "bound": "Tensor"}``. ``cpu_range`` also opens a
    ``record_function(name)`` range, so the event has a CPU row of its own in ``key_averages()``; pass False
    when an enclosing op (a custom op's own dispatch) should carry the device time.
    """
    if not recording():
        return _INACTIVE
    return _DeviceEvent(name, device, kind, cost, cpu_range)
