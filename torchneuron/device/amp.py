"""Automatic mixed precision on neuron (mirrors torch.cuda.amp).

torch.autocast("neuron", dtype=...) applies CUDA's op policy: csrc/amp/AutocastPolicy.cpp registers the
AutocastPrivateUse1 kernels from ATen's shared op lists. torch.amp.GradScaler("neuron") unscales and checks
gradients with _amp_foreach_non_finite_check_and_unscale_ / _amp_update_scale_ on the device. See docs/eager.md.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(torch.amp.autocast_mode.autocast):
    """torch.neuron.amp.autocast(dtype=torch.bfloat16) == torch.autocast("neuron", dtype=torch.bfloat16).

    bfloat16 is the default: it is the NeuronCore's native matmul type and needs no loss scaling.
    """

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.bfloat16, cache_enabled: bool = True):
        super().__init__("neuron", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """torch.neuron.amp.GradScaler(...) == torch.amp.GradScaler("neuron", ...); needed for float16 autocast."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__("neuron", *args, **kwargs)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: torch.dtype | None = None) -> Callable:
    """torch.amp.custom_fwd for neuron: a custom autograd Function's forward under neuron autocast."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type="neuron", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable) -> Callable:
    """torch.amp.custom_bwd for neuron: backward runs with the forward's autocast state."""
    return torch.amp.custom_bwd(bwd, device_type="neuron")
