"""``nki_ops.patch(model)`` / ``nki_ops.unpatch(model)``: run a model's layers on the NKI kernels.

What is swapped (per module instance: the module keeps its class, parameters, hooks and state_dict keys):

| module | becomes |
|---|---|
| ``nn.LayerNorm`` (normalised over the last dim) | ``nki_ops::layernorm_fwd`` |
| ``nn.RMSNorm``, and Hugging Face's Llama / Mistral / Qwen2 / Qwen3 RMSNorm (last dim) | ``nki_ops::rmsnorm_fwd`` |
| ``nn.Linear`` | ``nki_ops::linear`` |
| ``nn.Softmax(dim=-1)`` | ``nki_ops::softmax`` |
| the model itself | causal ``scaled_dot_product_attention`` calls, no mask or dropout: ``nki_ops::causal_attention`` |

A patched module falls back to its own forward for inputs the kernels do not take (not on the neuron device,
mixed dtypes, non-causal or masked attention, head dim > 128), so a patched model still runs anywhere. Under
``torch.autocast("neuron")`` the ops follow autocast's policy: linear and attention in the autocast dtype,
normalisations and softmax in float32. ``patch`` returns how many modules it swapped (the model counts once,
for its attention calls); ``unpatch`` restores every one of them exactly (an instance's own ``forward``
attribute, if it had one, included) and returns the same count.
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
# Hugging Face RMSNorms that compute weight * x / rms(x) (Gemma's (1 + weight) variant is not one of them)
_HF_RMSNORMS = ("LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm")


def _on_neuron(*tensors: torch.Tensor | None) -> bool:
    for t in tensors:  # a loop, not all(<generator>): asked several times per patched module call
        if t is not None and t.device.type != "neuron":
            return False
    return True


def _autocast_dtype() -> torch.dtype | None:
    return torch.get_autocast_dtype("neuron") if torch.is_autocast_enabled("neuron") else None


def _cast(dtype: torch.dtype | None, *tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    if dtype is None:
        return list(tensors)
    return [t if t is None else t.to(dtype) for t in tensors]


def _layernorm(module: nn.LayerNorm, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .torch_ops import layernorm

    if len(module.normalized_shape) != 1 or not _on_neuron(x, module.weight, module.bias):
        return original(x)
    fp32 = torch.float32 if _autocast_dtype() else None  # autocast runs layer_norm in float32
    x, w, b = _cast(fp32, x, module.weight, module.bias)
    if w is not None and x.dtype != w.dtype:
        return original(x)
    return layernorm(x, w, b, module.eps)


def _rmsnorm(module: nn.Module, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .torch_ops import rmsnorm

    weight = module.weight
    shape = getattr(module, "normalized_shape", (weight.shape[0],) if weight is not None else ())
    if len(shape) != 1 or weight is None or not _on_neuron(x, weight):
        return original(x)
    eps = getattr(module, "variance_epsilon", None) or getattr(module, "eps", None) or torch.finfo(x.dtype).eps
    if type(module).__name__ in _HF_RMSNORMS:  # HF: normalise in float32, round, then scale in weight's dtype
        y = rmsnorm(x.float(), torch.ones_like(weight, dtype=torch.float32), eps).to(x.dtype)
        return weight * y
    fp32 = torch.float32 if _autocast_dtype() else None
    x, weight = _cast(fp32, x, weight)
    if x.dtype != weight.dtype:
        return original(x)
    return rmsnorm(x, weight, eps)


def _linear(module: nn.Linear, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .torch_ops import linear

    if not _on_neuron(x, module.weight, module.bias):
        return original(x)
    x, w, b = _cast(_autocast_dtype(), x, module.weight, module.bias)
    if x.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        return original(x)
    return linear(x, w, b)


def _softmax(module: nn.Softmax, original: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    from .torch_ops import softmax

    if module.dim not in (-1, x.dim() - 1) or not _on_neuron(x):
        return original(x)
    return softmax(x.float() if _autocast_dtype() else x)


def _attention_calls(module: nn.Module, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with _CausalAttentionToNki():
        return original(*args, **kwargs)


class _CausalAttentionToNki(torch.overrides.TorchFunctionMode):
    """Inside a patched model's forward: causal SDPA calls the kernels take go to nki_ops::causal_attention."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            out = _maybe_nki_attention(*args, **kwargs)
            if out is not None:
                return out
        return func(*args, **kwargs)


def _maybe_nki_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    from .torch_ops import causal_attention

    if (attn_mask is not None or not is_causal or dropout_p != 0.0 or enable_gqa or q.shape != k.shape
            or q.shape != v.shape or q.dim() < 3 or q.shape[-1] > 128 or not _on_neuron(q, k, v)):
        return None
    q, k, v = _cast(_autocast_dtype(), q, k, v)
    if len({q.dtype, k.dtype, v.dtype}) != 1 or q.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return None
    return causal_attention(q, k, v, scale)


def _replacement(module: nn.Module) -> Callable[..., Any] | None:
    rms = getattr(nn, "RMSNorm", None)
    if isinstance(module, nn.LayerNorm):
        return _layernorm
    if (rms is not None and isinstance(module, rms)) or type(module).__name__ in _HF_RMSNORMS:
        return _rmsnorm
    if isinstance(module, nn.Linear):
        return _linear
    if isinstance(module, nn.Softmax):
        return _softmax
    return None


def _swap(module: nn.Module, new: Callable[..., Any]) -> None:
    setattr(module, _MARK, module.__dict__.get("forward", _MISSING))
    module.forward = functools.partial(new, module, module.forward)


def patch(model: nn.Module) -> int:
    """Swap every matching module of ``model`` for its NKI version and route the model's causal attention
    calls to the NKI kernel; returns how many modules were swapped."""
    count = 0
    for module in model.modules():
        new = _replacement(module) or (_attention_calls if module is model else None)
        if new is None or getattr(module, _MARK, None) is not None:
            continue
        _swap(module, new)
        count += 1
    return count


def unpatch(model: nn.Module) -> int:
    """Undo ``patch``: every swapped module gets its own forward back; returns how many."""
    count = 0
    for module in model.modules():
        own = module.__dict__.pop(_MARK, None)
        if own is None:
            continue
        if own is _MISSING:
            del module.__dict__["forward"]
        else:
            module.__dict__["forward"] = own
        count += 1
    return count
