"""Dynamo's ``DeviceInterface`` for neuron: how traced code reaches devices, streams and events (the
``torch.cuda`` counterparts Dynamo and its backends call)."""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device


class NeuronInterface(DeviceInterface):
    device = torch.neuron.device  # type: ignore[attr-defined]
    Event = torch.neuron.Event  # type: ignore[attr-defined]
    Stream = torch.neuron.Stream  # type: ignore[attr-defined]

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.neuron.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.neuron.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            return torch.neuron.get_device_properties(device)

    current_device = staticmethod(torch.neuron.current_device)
    set_device = staticmethod(torch.neuron.set_device)
    device_count = staticmethod(torch.neuron.device_count)
    stream = staticmethod(torch.neuron.stream)
    current_stream = staticmethod(torch.neuron.current_stream)
    synchronize = staticmethod(torch.neuron.synchronize)
    get_device_properties = staticmethod(torch.neuron.get_device_properties)

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.neuron.set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        torch.neuron.set_stream(torch.neuron.Stream(stream_id=stream_id, device_index=device_index,
                                                    device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.neuron.current_stream(device_idx).stream_id

    @staticmethod
    def is_available() -> bool:
        return torch.neuron.is_available()

    @staticmethod
    def exchange_device(device: int) -> int:
        prev = torch.neuron.current_device()
        if device >= 0 and device != prev:
            torch.neuron.set_device(device)
        return prev

    maybe_exchange_device = exchange_device

    @staticmethod
    def get_compute_capability(device: Any = None) -> str:
        return torch.neuron.get_device_properties(device).target

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return torch.neuron.memory_allocated(device)


def register() -> None:
    register_interface_for_device("neuron", NeuronInterface)
    for i in range(torch.neuron.device_count()):
        register_interface_for_device(f"neuron:{i}", NeuronInterface)
