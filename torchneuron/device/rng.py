"""Per-device random number generators (mirrors torch.cuda.random).

Every entry point is opaque to Dynamo (``_opaque_to_dynamo``; an eager program never imports Dynamo for it): Dynamo
inlines third-party Python, and tracing into a generator's state (a clone under the ``no_dispatch`` that
``freeze_rng_state`` sets, a seed queued for the runtime) fails or bakes a side effect into a graph. A reseed
inside a compiled function is a graph break that runs here, eagerly, as torch.cuda's does.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Iterable

import torch

from torchneuron import _C
from torchneuron.device._device import _index, current_device, device_count
from torchneuron.device._lazy import _lazy_call, _lazy_init


def _opaque_to_dynamo(fn: Callable) -> Callable:
    """What ``torch._disable_dynamo`` gives, without importing Dynamo (1.4 s) at the first ``torch.manual_seed``
    of every program: a traced caller graph-breaks at the call (``_torchdynamo_disable``), Dynamo never traces
    the wrapper as a frame of its own (its code is marked skipped, as ``torch._dynamo.skip_code`` does, through
    the C API that is loaded with torch), and once Dynamo is loaded ``fn`` runs with Dynamo disabled, so
    nothing it calls is traced either."""
    disabled: list[Callable] = []

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:  # nothing can be tracing
            return fn(*args, **kwargs)
        if not disabled:
            from torch._dynamo import disable

            disabled.append(disable(fn))
        return disabled[0](*args, **kwargs)

    inner._torchdynamo_disable = True  # type: ignore[attr-defined]
    _skip_frames_of(inner.__code__)
    return inner


def _skip_frames_of(code: Any) -> None:
    frames = torch._C._dynamo.eval_frame
    frames.set_code_exec_strategy(code, frames._FrameExecStrategy(frames._FrameAction.SKIP,
                                                                  frames._FrameAction.DEFAULT))


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
