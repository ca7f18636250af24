"""Automatic mixed precision on neuron: torch.autocast("neuron", ...) and torch.amp.GradScaler("neuron")."""

from __future__ import annotations

import torch


class autocast(torch.amp.autocast_mode.autocast):
    """torch.neuron.amp.autocast(dtype=torch.bfloat16) == torch.autocast("neuron", dtype=torch.bfloat16)."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.bfloat16, cache_enabled: bool = True):
        super().__init__("neuron", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    def __init__(self, *args, **kwargs):
        super().__init__("neuron", *args, **kwargs)
