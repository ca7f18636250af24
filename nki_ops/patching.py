"""``nki_ops.patch(model)`` / ``nki_ops.unpatch(model)``: run a model's layers on the NKI kernels.

What is swapped (per module instance; the module keeps its class, parameters, hooks and state_dict keys):

| module | becomes |
|---|---|
| ``nn.LayerNorm`` (normalised over the last dim) | ``nki_ops::layernorm_fwd`` |
| ``nn.RMSNorm`` (last dim) | ``nki_ops::rmsnorm_fwd`` |
| ``nn.Linear`` | ``nki_ops::linear`` |
| ``nn.Softmax(dim=-1)`` | ``nki_ops::softmax`` |
| any module whose ``forward`` calls ``scaled_dot_product_attention`` | causal calls without mask or dropout go to ``nki_ops::causal_attention`` |

A patched module falls back to its own forward for inputs the kernels do not take (not on the neuron device,
mixed dtypes, non-causal attention, head dim > 128), so a patched model still runs anywhere. ``patch``
returns how many modules it swapped; ``unpatch`` restores every one of them exactly (the instance's own
``forward`` attribute, if it had one, included) and returns that count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

_MARK = "_nki_ops_patch"
_MISSING = object()


def _on_neuron(*tensors: torch.Tensor | None) -> bool:
    return all(t is None or t.device.type == "neuron" for t in tensors)


def _layernorm(module: nn.LayerNorm, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .ops import layernorm

    if len(module.normalized_shape) != 1 or not _on_neuron(x, module.weight, module.bias):
        return original(x)
    return layernorm(x, module.weight, module.bias, module.eps)


def _rmsnorm(module: nn.Module, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .ops import rmsnorm

    weight = module.weight
    if len(module.normalized_shape) != 1 or weight is None or not _on_neuron(x, weight):
        return original(x)
    eps = module.eps if module.eps is not None else torch.finfo(x.dtype).eps
    return rmsnorm(x, weight, eps)


def _linear(module: nn.Linear, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .ops import linear

    if not _on_neuron(x, module.weight, module.bias) or x.dtype != module.weight.dtype:
        return original(x)
    return linear(x, module.weight, module.bias)


def _softmax(module: nn.Softmax, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .ops import softmax

    if module.dim not in (-1, x.dim() - 1) or not _on_neuron(x):
        return original(x)
    return softmax(x)


def _attention_forward(module: nn.Module, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with _CausalAttentionToNki():
        return original(*args, **kwargs)


class _CausalAttentionToNki(torch.overrides.TorchFunctionMode):
    """Inside a patched module's forward: causal SDPA calls the kernels take go to nki_ops::causal_attention."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            out = _maybe_nki_attention(*args, **kwargs)
            if out is not None:
                return out
        return func(*args, **kwargs)


def _maybe_nki_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    from .ops import causal_attention

    if (attn_mask is not None or not is_causal or dropout_p != 0.0 or enable_gqa or q.shape != k.shape
            or q.shape != v.shape or q.dim() < 3 or q.shape[-1] > 128 or not _on_neuron(q, k, v)
            or len({q.dtype, k.dtype, v.dtype}) != 1 or q.dtype not in (torch.float32, torch.bfloat16, torch.float16)):
        return None
    return causal_attention(q, k, v, scale)


def _calls_sdpa(module: nn.Module) -> bool:
    forward = type(module).forward
    code = getattr(forward, "__code__", None)
    return code is not None and "scaled_dot_product_attention" in code.co_names


def _replacement(module: nn.Module) -> Callable[..., Any] | None:
    rms = getattr(nn, "RMSNorm", None)
    if isinstance(module, nn.LayerNorm):
        return _layernorm
    if rms is not None and isinstance(module, rms):
        return _rmsnorm
    if isinstance(module, nn.Linear):
        return _linear
    if isinstance(module, nn.Softmax):
        return _softmax
    if _calls_sdpa(module):
        return _attention_forward
    return None


def patch(model: nn.Module) -> int:
    """Swap every matching module of ``model`` (itself included) for its NKI version; returns how many."""
    count = 0
    for module in model.modules():
        if getattr(module, _MARK, None) is not None:
            continue  # already patched
        new = _replacement(module)
        if new is None:
            continue
        own = module.__dict__.get("forward", _MISSING)
        original = module.forward
        setattr(module, _MARK, own)
        module.forward = functools.partial(new, module, original)
        count += 1
    return count


def unpatch(model: nn.Module) -> int:
    """Undo ``patch``: every swapped module gets its own forward back; returns how many."""
    count = 0
    for module in model.modules():
        own = module.__dict__.get(_MARK, None)
        if own is None:
            continue
        del module.__dict__[_MARK]
        if own is _MISSING:
            del module.__dict__["forward"]
        else:
            module.__dict__["forward"] = own
        count += 1
    return count
