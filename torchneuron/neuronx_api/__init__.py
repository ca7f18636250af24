"""AWS TorchNeuron's ``torch_neuronx`` API, implemented on torchneuron.

Scripts written for AWS's native backend (``import torch_neuronx``; pip ``torch-neuronx`` >= 2.13.3) run
unchanged: when AWS's package is not installed, ``import torch_neuronx`` gives this module
(``torchneuron._neuronx_alias``). Each name does what AWS documents, on torchneuron's device:

- device: ``device_count``, ``current_device``, ``set_device``, ``device``, ``get_device_properties``,
  ``synchronize``, ``is_neuron_runtime_initialized``, ``empty_cache``;
- streams and events: ``Stream``, ``Event``, ``stream``, ``current_stream``, ``default_stream``, ``set_stream``;
- memory: ``memory_stats`` (AWS's nested and CUDA's flat keys), ``memory_allocated`` and the rest of
  ``torch.neuron``'s memory functions;
- NKI: ``nki_op``, ``wrap_nki``; op tracking: ``get_executed_ops``, ``get_fallback_ops``,
  ``clear_op_tracking``; profiling: ``NeuronProfiler``; compile metrics: ``get_dynamo_metrics``;
- submodules: ``memory``, ``streams``, ``profiling``, ``nki_hop``, ``neuron`` (= ``torch.neuron``),
  ``distributed``, ``neuron_dynamo_backend``, ``utils``.

Any other ``torch.neuron`` function is reachable here too. Names of the XLA-based torch-neuronx (<= 2.9:
``trace``, ``DataParallel``, ``xla_impl``, ...) are not part of TorchNeuron; they raise an error that says
what to use instead. See docs/integrations.md for the table.
"""

from __future__ import annotations

import importlib
from typing import Any

from torchneuron.device._device import device, device_count, get_device_properties, synchronize
from torchneuron.device.streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream

from .memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .op_tracking import clear_op_tracking, get_executed_ops, get_fallback_ops

__version__ = "2.13.3.0+torchneuron"  # AWS's package family for PyTorch 2.13, the torch torchneuron is built on


def current_device() -> int:
    import torch

    return torch.neuron.current_device()


def set_device(device: Any) -> None:
    """As AWS's: an index outside ``0 .. device_count() - 1`` is a ``ValueError``."""
    import torch

    idx = torch.device(device).index if isinstance(device, (str, torch.device)) else device
    if isinstance(idx, int) and not 0 <= idx < device_count():
        raise ValueError(f"Invalid device id: {idx}. Valid range is 0 to {device_count() - 1}")
    torch.neuron.set_device(device)


def is_neuron_runtime_initialized() -> bool:
    import torch

    return torch.neuron.is_initialized()


def _autoload() -> None:
    """AWS's ``torch.backends`` entry point; torchneuron registered the device already."""


_LAZY = {
    "nki_op": ("torchneuron.custom_ops.op", "nki_op"),
    "wrap_nki": ("torchneuron.custom_ops.wrap", "wrap_nki"),
    "NeuronProfiler": ("torchneuron.neuronx_api.profiling", "NeuronProfiler"),
    "get_dynamo_metrics": ("torchneuron.dynamo.metrics", "get_dynamo_metrics"),
    "reset_dynamo_metrics": ("torchneuron.dynamo.metrics", "reset_dynamo_metrics"),
}

# AWS's submodules -> the modules that implement them here.
SUBMODULES = {
    "memory": "torchneuron.neuronx_api.memory",
    "streams": "torchneuron.neuronx_api.streams",
    "profiling": "torchneuron.neuronx_api.profiling",
    "nki_hop": "torchneuron.neuronx_api.nki_hop",
    "utils": "torchneuron.neuronx_api.utils",
    "neuron_dynamo_backend": "torchneuron.neuronx_api.neuron_dynamo_backend",
    "neuron": "torchneuron.device",
    "distributed": "torchneuron.distributed",
    "op_tracking": "torchneuron.neuronx_api.op_tracking",
}

# The XLA-based torch-neuronx (<= 2.9, torch-xla lazy tensors) is not TorchNeuron: these names have no
# meaning on a PrivateUse1 device, on AWS's native backend as here.
_XLA_ERA = {
    "trace": "torch.compile(model, backend='neuron') (or run the model eagerly on device='neuron')",
    "analyze": "torch.compile(model, backend='neuron') and torchneuron.fallback_ops() for unsupported ops",
    "DataParallel": "torch.nn.parallel.DistributedDataParallel with dist.init_process_group('neuron')",
    "dynamic_batch": "torch.compile(model, backend='neuron') (one compile per shape)",
    "async_load": "torch.compile(model, backend='neuron')",
    "bucket_model_trace": "torch.compile(model, backend='neuron') with padded shapes",
    "replace_weights": "model.load_state_dict(...) on the neuron model",
    "move_trace_to_device": "model.to('neuron')",
    "lazy_load": "torch.compile(model, backend='neuron')",
    "nki_jit": "@nki.jit kernels called through wrap_nki(kernel) or an @nki_op function",
    "xla_impl": "torch.compile(backend='neuron') and the torch_neuronx API of TorchNeuron",
    "experimental": "torch.profiler with ProfilerActivity.PrivateUse1, or torch_neuronx.NeuronProfiler",
    "testing": "torch.testing on neuron tensors",
}


def unsupported(name: str) -> str:
    return (f"torch_neuronx.{name} belongs to the XLA-based torch-neuronx (<= 2.9), not to TorchNeuron, the native "
            f"'neuron' device that torchneuron provides; use {_XLA_ERA[name]}.")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in SUBMODULES:
        return importlib.import_module(SUBMODULES[name])
    if name in _XLA_ERA:
        raise AttributeError(unsupported(name))
    import torch

    if not name.startswith("__") and hasattr(torch.neuron, name):
        return getattr(torch.neuron, name)  # AWS mirrors torch.neuron's functions here
    raise AttributeError(f"module 'torch_neuronx' has no attribute {name!r} (torchneuron provides AWS TorchNeuron's "
                         "documented API: see docs/integrations.md)")


__all__ = ["Event", "NeuronProfiler", "Stream", "StreamContext", "clear_op_tracking", "current_device",
           "current_stream", "default_stream", "device", "device_count", "empty_cache", "get_device_properties",
           "get_dynamo_metrics", "get_executed_ops", "get_fallback_ops", "is_neuron_runtime_initialized",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "memory_summary", "nki_op", "reset_accumulated_memory_stats", "reset_dynamo_metrics",
           "reset_peak_memory_stats", "set_device", "set_stream", "stream", "synchronize", "wrap_nki"]


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(SUBMODULES) | {"__version__"})
