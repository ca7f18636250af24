"""``torch_neuronx.profiling.NeuronProfiler``: one context manager for the PyTorch trace and the device's.

AWS's profiler starts the Neuron runtime's inspector (system and device traces written by libnrt into
``neuron_output_dir``) and, when ``pytorch_activities`` are given, ``torch.profiler`` with a chrome trace
saved in the same directory. Here the device's activity is recorded by torchneuron's Kineto plugin
(``ProfilerActivity.PrivateUse1``: one event per eager op, compiled piece and NKI kernel, docs/profiler.md), so
one ``torch.profiler`` session gives both: the trace (``pytorch_trace.json`` or ``pytorch_trace_file``) and
an HTML report of it (``neuron_report.html``) go to ``neuron_output_dir``. libnrt's own ``.ntff``/``.pb``
files are not produced (no libnrt inspector is driven by torchneuron).
"""

from __future__ import annotations

import enum
import os
from typing import Any

from torch.profiler import ProfilerActivity, profile


class NeuronProfiler:
    """``with NeuronProfiler(pytorch_activities=[ProfilerActivity.CPU], neuron_output_dir="out"): ...``"""

    def __init__(self, pytorch_activities: list[ProfilerActivity] | None = None, record_shapes: bool = False,
                 pytorch_trace_file: str | None = None, neuron_output_dir: str = "./output",
                 event_filters: dict[str, list[Any]] | None = None):
        self.pytorch_activities = list(pytorch_activities or [])
        self.record_shapes = record_shapes
        self.neuron_output_dir = neuron_output_dir
        self.pytorch_trace_file = os.path.join(neuron_output_dir, pytorch_trace_file or "pytorch_trace.json")
        self.report_file = os.path.join(neuron_output_dir, "neuron_report.html")
        self.event_filters = event_filters or {}
        unknown = set(self.event_filters) - {"nc", "types"}
        if unknown:
            raise ValueError(f"NeuronProfiler: unknown event_filters key(s) {sorted(unknown)}; expected 'nc', 'types'")
        self._profiler: Any = None
        self._active = False

    def start(self) -> None:
        if self._active:
            raise RuntimeError("Profiler is already active")
        activities = list(dict.fromkeys(self.pytorch_activities + [ProfilerActivity.PrivateUse1]))
        self._profiler = profile(activities=activities, record_shapes=self.record_shapes)
        self._profiler.__enter__()
        self._active = True

    def stop(self) -> None:
        if not self._active:
            raise RuntimeError("Profiler is not active")
        import torch

        torch.neuron.synchronize()  # the device events of queued work belong to this session
        self._profiler.__exit__(None, None, None)
        self._active = False
        os.makedirs(self.neuron_output_dir, exist_ok=True)
        self._profiler.export_chrome_trace(self.pytorch_trace_file)
        from torchneuron.profiler import write_report

        write_report(self.pytorch_trace_file, self.report_file, title="NeuronProfiler")

    def __enter__(self) -> NeuronProfiler:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.stop()
        return False

    def is_active(self) -> bool:
        return self._active

    def has_pytorch_profiling(self) -> bool:
        return bool(self.pytorch_activities)

    def get_pytorch_trace(self) -> str | None:
        """The session's operator table (``torch.profiler``'s ``key_averages``), once stopped."""
        if self._profiler is None or self._active:
            return None
        return self._profiler.key_averages().table(row_limit=50)

    def get_nrt_output_directory(self) -> str:
        return self.neuron_output_dir

    def export_pytorch_trace(self, filename: str) -> None:
        if self._profiler is None:
            raise ValueError("PyTorch profiling not enabled or not started")
        if self._active:
            raise ValueError("Cannot export trace while profiling is active")
        self._profiler.export_chrome_trace(filename)

    @property
    def profiler(self) -> Any:
        """The underlying ``torch.profiler.profile`` (its ``key_averages()``, ``events()``)."""
        return self._profiler


class ProfileMode(enum.Enum):
    """AWS 2.33's libnrt capture modes (``.ntff`` device traces, runtime system traces, host CPU and memory)."""

    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


class NeuronConfig:
    """AWS 2.33's configuration of libnrt's capture inside ``torch.profiler``: refused with the reason."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise RuntimeError(
            "torch_neuronx.profiling.NeuronConfig configures libnrt's inspector (.ntff device traces, runtime "
            "system traces), which torchneuron does not drive. The neuron device's activity is recorded by "
            "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) without "
            "it; torch_neuronx.NeuronProfiler(neuron_output_dir=...) also writes an HTML report (docs/profiler.md).")


class NRTProfilerError(Exception):
    """AWS's error type for libnrt profiling failures (kept so ``except NRTProfilerError`` works)."""


__all__ = ["NRTProfilerError", "NeuronConfig", "NeuronProfiler", "ProfileMode"]
