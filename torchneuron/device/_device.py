"""Devices: count, selection, names and properties (mirrors torch.cuda)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from torchneuron import _C
from torchneuron.device._lazy import _lazy_init


def is_available() -> bool:
    return _C._device_count() > 0


def device_count() -> int:
    """Never raises and never initialises the runtime (safe in forked children and at import)."""
    return _C._device_count()


def _index(device: Any = None, optional: bool = True) -> int:
    if device is None:
        return current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"expected a neuron device, got {device}")
        return current_device() if device.index is None else device.index
    if isinstance(device, int):
        return device
    raise TypeError(f"expected a neuron device (int, str or torch.device), got {type(device).__name__}")


def current_device() -> int:
    _lazy_init()
    return _C._get_device()


def set_device(device: Any) -> None:
    idx = _index(device)
    _lazy_init()
    _C._set_device(idx)


_synchronize_hooks: list = []


def add_synchronize_hook(hook) -> None:
    """``hook()`` runs at every synchronize, after the streams: work the runtime does beside the device's
    streams (the compile cross-check) finishes there too, and raises what it found."""
    if hook not in _synchronize_hooks:
        _synchronize_hooks.append(hook)


def synchronize(device: Any = None) -> None:
    """Waits for all work queued on every stream of `device` (default: current) to finish."""
    _lazy_init()
    _C._synchronize(_index(device))
    for hook in _synchronize_hooks:
        hook()


class device:
    """Context manager that makes `idx` the current neuron device, like torch.cuda.device."""

    def __init__(self, idx: Any):
        self.idx = -1 if idx is None else _index(idx)
        self.prev = -1

    def __enter__(self):
        if self.idx >= 0:
            _lazy_init()
            self.prev = _C._get_device()
            if self.prev != self.idx:
                _C._set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev != self.idx:
            _C._set_device(self.prev)
        return False


class device_of(device):
    """Context manager selecting the device of a tensor (no-op for non-neuron tensors)."""

    def __init__(self, obj: torch.Tensor):
        super().__init__(obj.get_device() if obj.device.type == "neuron" else -1)


@dataclass(frozen=True)
class NeuronDeviceProperties:
    name: str
    target: str
    instance: str
    core_generation: str
    cores: int  # physical NeuronCores fused into this logical device (LNC)
    total_memory: int
    runtime: str

    def __repr__(self) -> str:
        return (
            f"NeuronDeviceProperties(name='{self.name}', target='{self.target}', cores={self.cores}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, runtime='{self.runtime}')"
        )


def get_device_properties(device: Any = None) -> NeuronDeviceProperties:
    _lazy_init()
    idx = _index(device)
    if not 0 <= idx < device_count():
        raise AssertionError(f"Invalid device id neuron:{idx}; {device_count()} neuron device(s) available")
    info = _C._runtime_info()
    return NeuronDeviceProperties(
        name=get_device_name(idx),
        target=info["target"],
        instance=info["instance"],
        core_generation=info["core_generation"],
        cores=info["lnc"],
        total_memory=info["hbm_bytes_per_device"],
        runtime=info["runtime"],
    )


def get_device_name(device: Any = None) -> str:
    _lazy_init()
    info = _C._runtime_info()
    suffix = " (simulated)" if info["runtime"] == "sim" else ""
    return f"AWS {info['target']} NeuronCore-{info['core_generation'].split('-')[-1]} x{info['lnc']}{suffix}"


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16, torch.float32]
