"""torch.neuron: the neuron device module (mirrors torch.cuda)."""

from __future__ import annotations

from torchneuron.device import amp
from torchneuron.device._device import (
    NeuronDeviceProperties,
    current_device,
    device,
    device_count,
    device_of,
    get_amp_supported_dtype,
    get_device_name,
    get_device_properties,
    is_available,
    is_bf16_supported,
    set_device,
    synchronize,
)
from torchneuron.device._lazy import _is_in_bad_fork, _lazy_call, _lazy_init, init, is_initialized
from torchneuron.device.memory import (
    empty_cache,
    host_memory_stats,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from torchneuron.device.rng import (
    default_generator,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from torchneuron.device.streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream

# Lets torchneuron recognise its own module when re-imported (see _registration.check_backend_unclaimed).
__torchneuron__ = True

from torchneuron.device import memory  # noqa: E402,F401  (torch.neuron.memory.*, as torch.cuda.memory)


def __getattr__(name: str):
    # torch.cuda._initialized is a module flag that PyTorch reads directly (torch.utils.checkpoint saves and
    # restores a device's RNG state only when it is true); here it follows the runtime.
    if name == "_initialized":
        return is_initialized()
    if name in ("get_dynamo_metrics", "reset_dynamo_metrics"):
        from torchneuron.dynamo import metrics as _metrics

        return getattr(_metrics, name)
    # Inductor asks the device module for its code generators (torch.utils.backend_registration); neuron has
    # none, and the ones it gets explain that torch.compile(backend="neuron") is the compiler for neuron.
    if name in ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen"):
        from torchneuron.dynamo import inductor_guard

        return getattr(inductor_guard, name)
    raise AttributeError(f"module 'torch.neuron' has no attribute {name!r}")
