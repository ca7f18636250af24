"""``nki_op``: a Python function that launches NKI kernels on torch tensors, registered as a torch custom op."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch

from ..nki import torch_io
from . import registry


def nki_op(name: str, fn: Callable[..., Any] | None = None, /, mutates_args: str | Iterable[str] = (), *,
           device_types: str | Iterable[str] | None = None, schema: str | None = None) -> Any:
    """Register ``fn`` as the custom op ``name`` ("namespace::op"), like ``torch.library.custom_op``.

    ``fn`` takes and returns torch tensors and calls ``@nki.jit`` kernels (either API generation, with grids)
    on them. Returns the ``torch.library.CustomOpDef``: call it, or use ``torch.ops.namespace.op``;
    ``register_autograd``, ``register_fake``, ``register_kernel`` work as on any custom op. The fake
    implementation is ``fn`` itself: on fake or meta tensors its kernels launch shape-only (they allocate
    their outputs, run their Python, touch no data). Tensor arguments must be on the neuron device.

    As in AWS TorchNeuron (``nki_op(name, fn=None, mutates_args={})``, the third argument may be positional):
    ``mutates_args`` defaults to none (``()``), and ``fn`` may return an argument it
    wrote (``return out``): PyTorch's custom ops may not return an input, so such a result is returned as a
    copy of the written tensor (the argument itself holds the same values).
    """

    def register(fn: Callable[..., Any]) -> Any:
        if isinstance(mutates_args, str) and mutates_args != "unknown":
            raise TypeError(f"torchneuron.nki_op({name!r}): mutates_args must be a tuple of argument names "
                            f"(e.g. mutates_args=({mutates_args!r},)), got the string {mutates_args!r}.")
        # inferred from fn itself: its annotations are evaluated in its own module
        sig_schema = schema or torch.library.infer_schema(fn, mutates_args=mutates_args)
        op = torch.library.custom_op(name, _device_impl(name, fn), mutates_args=mutates_args,
                                     device_types=device_types, schema=sig_schema)
        op.register_fake(_unaliasing(fn))
        registry.add(name, fn)
        return op

    return register if fn is None else register(fn)


def _device_impl(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = tuple(inspect.signature(fn).parameters)
    what = f"torchneuron.nki_op {name!r}"

    @functools.wraps(fn)
    def impl(*args: Any, **kwargs: Any) -> Any:
        _check_devices(name, names, args, kwargs)
        with torch_io.device_only(what):
            return _unaliased(fn(*args, **kwargs), args, kwargs)

    return impl


def _unaliasing(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def fake(*args: Any, **kwargs: Any) -> Any:
        return _unaliased(fn(*args, **kwargs), args, kwargs)

    return fake


def _unaliased(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``result`` with every tensor that is (or views) an argument replaced by a copy: a custom op may not
    return its input, and AWS's ``nki_op`` lets a function return the argument its kernel wrote."""
    inputs = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    for v in (*args, *kwargs.values()):
        if isinstance(v, (list, tuple)):
            inputs.extend(t for t in v if isinstance(t, torch.Tensor))
    if not inputs:
        return result

    def fix(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and any(value is t or torch._C._is_alias_of(value, t) for t in inputs):
            return value.clone()
        return value

    if isinstance(result, tuple):
        return tuple(fix(v) for v in result)
    if isinstance(result, list):
        return [fix(v) for v in result]
    return fix(result)


def _check_devices(name: str, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    # the op's schema has already matched the arguments to fn's parameters (`names`): only their devices
    # are checked here (every op call: no lists are built unless an argument is one)
    for i, value in enumerate(args):
        if not _on_neuron(value):
            _refuse(name, names[i] if i < len(names) else f"#{i}", value)
    for pname, value in kwargs.items():
        if not _on_neuron(value):
            _refuse(name, pname, value)


def _on_neuron(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.device.type == "neuron"
    if isinstance(value, (list, tuple)):
        return all(not isinstance(v, torch.Tensor) or v.device.type == "neuron" for v in value)
    return True


def _refuse(name: str, pname: str, value: Any) -> None:
    values = value if isinstance(value, (list, tuple)) else [value]
    v = next(v for v in values if isinstance(v, torch.Tensor) and v.device.type != "neuron")
    raise RuntimeError(
        f"{name}: argument {pname!r} {tuple(v.shape)} {v.dtype} is on {v.device}, but this NKI op's "
        f"kernels run on the neuron device. Move it there first: {pname}.to('neuron').")
