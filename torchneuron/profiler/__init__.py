"""Neuron device activity in ``torch.profiler`` and what the profiler cannot show by itself.

``torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])`` records one device
event per eager op, compiled graph piece and NKI kernel (C++: ``csrc/profiler/``, a Kineto plugin); this
package adds the Python side: recording events from Python (``device_event``), the session's events with
their estimated Trainium time (``device_activities``, ``device_table``), and the HTML report of a trace
(``write_report``; ``python -m torchneuron profile script.py``). See docs/profiler.md.
"""

from __future__ import annotations

from .events import device_event, now_ns, record_device_event, recording
from .report import write_report
from .tables import DeviceActivity, device_activities, device_table

__all__ = [
           "DeviceActivity",
           "device_activities",
           "device_event",
           "device_table",
           "now_ns",
           "record_device_event",
           "recording",
           "write_report",
]
