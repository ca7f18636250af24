"""Host arrays a kernel may be called with, and the NumPy views the simulator runs on.

The simulator computes on NumPy arrays. Every kind of array a caller may pass has a `HostKind`: how to get
a NumPy view of it (zero-copy where possible, so a kernel that writes an input changes the caller's array,
as on hardware) and how to give results back as the caller's kind. Built in: NumPy arrays, torch CPU tensors
and JAX arrays; torch and JAX are only imported when such an argument arrives.

A torch-facing layer (e.g. running kernels on `neuron` device memory) registers its own kind with
`register_host_kind` ahead of the built-in ones: its `to_numpy` returns a writable NumPy view of the device
buffer and `writes_through=True`, so no copy is made in either direction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from . import dtypes
from .errors import ERR_MEMORY, fail


class HostView(NamedTuple):
    """A NumPy view of a caller's array. `writes_through`: writes to `array` are writes to the caller's
    array (no copy-back needed); otherwise `write_back(values, written)` copies the elements the kernel wrote
    (`written`, a bool array of the same shape) back, or is None when the caller's array cannot be written (JAX
    arrays are immutable). Only written elements: the copy of a strided input the kernel only read must not
    overwrite what the kernel stored through another argument over the same memory (an in-place op whose
    output is its transposed input). A named tuple: one is made per array argument of every launch, at a
    third of a frozen dataclass's cost."""

    array: np.ndarray
    writes_through: bool
    write_back: Callable[[np.ndarray, np.ndarray], None] | None = None


@dataclass(frozen=True)
class HostKind:
    name: str
    accepts: Callable[[Any], bool]
    to_numpy: Callable[[Any, str], HostView]
    from_numpy: Callable[[np.ndarray], Any]


_KINDS: list[HostKind] = []


def register_host_kind(kind: HostKind) -> None:
    """Put `kind` in front of the known kinds (a later registration for the same name replaces it)."""
    _KINDS[:] = [kind] + [k for k in _KINDS if k.name != kind.name]


def kind_of(value: Any) -> HostKind | None:
    for kind in _KINDS:
        if kind.accepts(value):
            return kind
    return None


# ---- NumPy ----

def _numpy_view(arr: np.ndarray, name: str) -> HostView:
    if arr.flags.c_contiguous and arr.flags.writeable:
        return HostView(arr, True)
    copy = np.ascontiguousarray(arr).copy()

    def back(new: np.ndarray, written: np.ndarray) -> None:
        np.copyto(arr, new.reshape(arr.shape), where=written.reshape(arr.shape))
    return HostView(copy, False, back if arr.flags.writeable else None)


# ---- torch (imported only when a tensor arrives) ----

def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "device")


_TORCH_BITS = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
               "float8_e5m2": ("uint8", "float8_e5m2")}


def _torch_view(t: Any, name: str) -> HostView:
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        raise fail(ERR_MEMORY, f"kernel input {name!r} is on {t.device}; the simulator takes CPU tensors.",
                   "pass tensor.cpu(), or call the kernel through a registered NKI op.")
    flat = t if t.is_contiguous() else t.contiguous()
    bits = _TORCH_BITS.get(str(t.dtype).removeprefix("torch."))
    if bits is not None:  # NumPy has no bf16/fp8: view the bits, then the ml_dtypes type
        arr = flat.view(getattr(torch, bits[0])).numpy().view(getattr(dtypes, bits[1]))
    else:
        arr = flat.numpy()
    if flat is t:
        return HostView(arr, True)

    def back(new: np.ndarray, written: np.ndarray) -> None:
        values = _numpy_to_torch(new.reshape(t.shape))
        t.copy_(torch.where(torch.from_numpy(np.ascontiguousarray(written.reshape(t.shape))), values, t))
    return HostView(arr, False, back)


def _numpy_to_torch(a: np.ndarray) -> Any:
    import torch

    a = np.ascontiguousarray(a)
    for torch_name, (bits, nki_name) in _TORCH_BITS.items():
        if a.dtype == getattr(dtypes, nki_name):
            return torch.from_numpy(a.view(getattr(np, bits))).view(getattr(torch, torch_name))
    return torch.from_numpy(a)


# ---- JAX (imported only when an array arrives) ----

def _is_jax(x: Any) -> bool:
    return type(x).__module__.startswith(("jax", "jaxlib")) and hasattr(x, "__array__") and hasattr(x, "shape")


def _jax_view(x: Any, name: str) -> HostView:
    # JAX arrays are immutable: the kernel works on a copy, and writes to the input stay in the kernel
    return HostView(np.array(x), False, None)


def _numpy_to_jax(a: np.ndarray) -> Any:
    import jax.numpy as jnp
    return jnp.asarray(a)


register_host_kind(HostKind("jax", _is_jax, _jax_view, _numpy_to_jax))
register_host_kind(HostKind("torch", _is_torch, _torch_view, _numpy_to_torch))
register_host_kind(HostKind("numpy", lambda x: isinstance(x, np.ndarray), _numpy_view, np.array))
