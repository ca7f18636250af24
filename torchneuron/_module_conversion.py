"""`module.to("neuron")` keeps parameter identity, as `module.to("cuda")` does.

PyTorch converts a module's parameters in place (`param.data = ...`) only between device types it knows to
be layout-compatible (CPU, CUDA, XPU, ...); for a PrivateUse1 device it builds new Parameter objects instead,
which unties tied weights (a GPT's embedding and output head) and orphans optimizer references. Moving a
module to or from neuron therefore swaps the tensors into the existing Parameter objects
(torch.__future__'s swap_module_params_on_conversion, PyTorch's own mechanism), just for that call.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import torch
from torch import nn


@contextlib.contextmanager
def _swap_params_on_conversion():
    previous = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        yield
    finally:
        torch.__future__.set_swap_module_params_on_conversion(previous)


def _has_neuron_state(module: nn.Module) -> bool:
    return any(t.device.type == "neuron" for t in module.parameters()) or any(
        t.device.type == "neuron" for t in module.buffers()
    )


def _crosses_neuron(module: nn.Module, device: torch.device | None) -> bool:
    if device is None:
        return False
    return torch.device(device).type == "neuron" or _has_neuron_state(module)


@contextlib.contextmanager
def _lazy_tensors_moved_to(module: nn.Module, device: torch.device):
    """Uninitialized (lazy) parameters and buffers are re-created on ``device`` and kept out of the conversion,
    which would turn them into plain empty Parameters (PyTorch's PrivateUse1 and swap paths both do); they
    materialize there at the first forward, as lazy modules do on CUDA."""
    from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

    held = []
    for m in module.modules():
        for store in (m._parameters, m._buffers):
            for key, t in store.items():
                if isinstance(t, (UninitializedParameter, UninitializedBuffer)):
                    held.append((store, key, t))
                    store[key] = None
    try:
        yield
    finally:
        device = torch.device(device)
        for store, key, t in held:
            extra = {"persistent": t.persistent} if isinstance(t, UninitializedBuffer) else {}
            store[key] = type(t)(requires_grad=t.requires_grad, device=device, dtype=t.dtype, **extra)


def _wrap(method, target_device):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        device = target_device(*args, **kwargs)
        if _crosses_neuron(self, device):
            try:
                with _swap_params_on_conversion(), _lazy_tensors_moved_to(self, device):
                    return method(self, *args, **kwargs)
            except RuntimeError as e:
                # A parameter still referenced by a live autograd graph cannot be swapped; convert the rest
                # the way PyTorch does for PrivateUse1 devices (new Parameter objects).
                if "swap" not in str(e):
                    raise
                warnings.warn(
                    f"torchneuron: could not keep Parameter identity while moving {type(self).__name__} "
                    f"({e}); parameters were converted into new Parameter objects, so tied weights are untied "
                    "and optimizers must be created after the move. Free autograd graphs (loss.backward(), "
                    "del outputs) before moving the module.",
                    stacklevel=2,
                )
        return method(self, *args, **kwargs)

    wrapper.__torchneuron_wrapped__ = True
    return wrapper


def install() -> None:
    if getattr(nn.Module.to, "__torchneuron_wrapped__", False):
        return
    nn.Module.to = _wrap(nn.Module.to, lambda *a, **k: torch._C._nn._parse_to(*a, **k)[0])
    nn.Module.cpu = _wrap(nn.Module.cpu, lambda *a, **k: torch.device("cpu"))
    nn.Module.neuron = _wrap(nn.Module.neuron, lambda *a, **k: torch.device("neuron"))
