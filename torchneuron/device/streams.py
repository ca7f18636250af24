"""Streams and events (mirrors torch.cuda.Stream / torch.cuda.Event on top of torch.Stream / torch.Event)."""

from __future__ import annotations

from typing import Any

import torch

from torchneuron.device._device import _index
from torchneuron.device._lazy import _lazy_init


# c10::DeviceType::PrivateUse1, the device_type torch.Stream records for neuron streams.
_PRIVATEUSE1 = 20


class Stream(torch.Stream):
    """An ordered queue of work on one neuron device."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        _lazy_init()
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        with torch.neuron.device(device):
            return super().__new__(cls, device="neuron", priority=priority)

    def wait_event(self, event: torch.Event) -> None:
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, torch.Stream) and super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self.stream_id, self.device_index, self.device_type))

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device=neuron:{self.device_index} stream_id={self.stream_id}>"


def _wrap(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class _NeuronEventType(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "neuron"


class Event(metaclass=_NeuronEventType):
    """A marker in a stream: record(), query(), synchronize(), wait(), elapsed_time() as on CUDA.

    Instances are torch.Event objects on the neuron device (torch.Event's methods insist on that exact
    type), so they mix freely with torch.Stream, torch.accelerator and torch.neuron.Stream.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess:
            raise ValueError("neuron: interprocess events are not supported")
        _lazy_init()
        return torch.Event(device="neuron", enable_timing=enable_timing, blocking=blocking)


def current_stream(device: Any = None) -> Stream:
    _lazy_init()
    return _wrap(torch.accelerator.current_stream(_index(device)))


def default_stream(device: Any = None) -> Stream:
    _lazy_init()
    return Stream(stream_id=0, device_index=_index(device), device_type=_PRIVATEUSE1)


def set_stream(stream: torch.Stream) -> None:
    if stream is None:
        return
    _lazy_init()
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes `stream` current on its device for the duration of a `with` block."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.prev: torch.Stream | None = None
        self.prev_device = -1

    def __enter__(self):
        if self.stream is None:
            return self.stream
        _lazy_init()
        self.prev_device = torch.neuron.current_device()
        self.prev = torch.accelerator.current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None and self.prev is not None:
            torch.accelerator.set_stream(self.prev)
            torch.neuron.set_device(self.prev_device)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    return StreamContext(stream)
