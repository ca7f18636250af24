"""Per-device random number generators (mirrors torch.cuda.random).

Every entry point is opaque to Dynamo (``_opaque_to_dynamo``; an eager program never imports Dynamo for it): Dynamo
inlines third-party Python, and tracing into a generator's state (a clone under the ``no_dispatch`` that
``freeze_rng_state`` sets, a seed queued for the runtime) fails or bakes a side effect into a graph. A reseed
inside a compiled function is a graph break that runs here, eagerly, as torch.cuda's does.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

from torchneuron import _C
from torchneuron._dynamo_opaque import opaque_to_dynamo as _opaque_to_dynamo
from torchneuron.device._device import _index, current_device, device_count
from torchneuron.device._lazy import _lazy_call, _lazy_init



@_opaque_to_dynamo
def default_generator(device: Any = None) -> torch.Generator:
    _lazy_init()
    return _C._get_default_generator(_index(device))


@_opaque_to_dynamo
def get_rng_state(device: Any = "neuron") -> torch.Tensor:
    return default_generator(device).get_state()


@_opaque_to_dynamo
def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


@_opaque_to_dynamo
def set_rng_state(new_state: torch.Tensor, device: Any = "neuron") -> None:
    state = new_state.clone(memory_format=torch.contiguous_format)
    idx = _index(device) if not isinstance(device, str) or device != "neuron" else None
    _lazy_call(lambda: default_generator(current_device() if idx is None else idx).set_state(state))


@_opaque_to_dynamo
def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


@_opaque_to_dynamo
def manual_seed(seed: int) -> None:
    """Seeds the current device's generator (queued until the runtime starts)."""
    seed = int(seed)
    _lazy_call(lambda: default_generator(current_device()).manual_seed(seed))


@_opaque_to_dynamo
def manual_seed_all(seed: int) -> None:
    """Seeds every neuron device's generator; torch.manual_seed calls this too."""
    seed = int(seed)

    def apply() -> None:
        for i in range(device_count()):
            default_generator(i).manual_seed(seed)

    _lazy_call(apply)


@_opaque_to_dynamo
def seed() -> None:
    _lazy_call(lambda: default_generator(current_device()).seed())


@_opaque_to_dynamo
def seed_all() -> None:
    def apply() -> None:
        s = default_generator(0).seed()
        for i in range(1, device_count()):
            default_generator(i).manual_seed(s)

    _lazy_call(apply)


@_opaque_to_dynamo
def initial_seed() -> int:
    return default_generator(current_device()).initial_seed()
