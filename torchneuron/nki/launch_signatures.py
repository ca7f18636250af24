"""Device launches whose signature already ran fully checked.

neuronx-cc compiles an NKI kernel once per signature: the instructions a kernel issues follow from its
arguments' shapes, dtypes and strides and its non-tensor arguments, not from tensor values. A model calls the
same kernel at the same shapes every step, so the simulator checks a signature once: the first device launch
of it keeps the on-chip live ranges (SBUF/PSUM capacity errors) and the cost model; a repeat computes every
value exactly as before, but keeps neither and reports the first launch's cost estimate.

Since values are always computed, a repeat cannot return other numbers than a checked launch would. What it
skips could only differ if the instructions depended on more than the signature:
- tensor values steering the kernel (indirect indices, dynamic offsets, registers loaded from tiles): such a
  launch says so (`core.data_dependence`) and its signature is never taken as checked;
- an argument whose value the key cannot see (any object but numbers, strings, dtypes, enums, functions and
  tensors; containers of those are looked into): the launch is always fully checked;
- module globals the kernel reads, changed between calls: not in the key (a kernel's globals are its code).
"""

from __future__ import annotations

import enum
import sys
import weakref
from collections.abc import Callable
from types import BuiltinFunctionType, FunctionType
from typing import Any

import numpy as np

from .cost import CostReport

_PER_KERNEL = 64  # signatures remembered per kernel function (the oldest go first)
_checked: weakref.WeakKeyDictionary[Callable[..., Any], dict[tuple[Any, ...], CostReport]] = \
    weakref.WeakKeyDictionary()


class _Unseen(Exception):
    """An argument the key cannot describe."""


# exact types (a subclass of float could carry anything); then kinds whose instances are values or singletons
_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes, range, slice, FunctionType, BuiltinFunctionType,
                    type})
_VALUE_KINDS = (np.dtype, np.generic, enum.Enum)


_TENSOR_TYPES: set[type] = set()  # torch.Tensor classes seen (checked by isinstance once per class)


def _tensor_part(value: Any) -> tuple[Any, ...]:
    return "tensor", value.shape, value.dtype, value.stride(), value.storage_offset(), value.device


def _part(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return kind, value  # the type too: 1, 1.0 and True are one dict key
    if kind in _TENSOR_TYPES:
        return _tensor_part(value)
    if kind is tuple or kind is list:
        return kind, tuple(_part(v) for v in value)
    if kind is dict:
        return kind, tuple(sorted((k, _part(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return "array", value.shape, value.dtype.str, value.strides
    if isinstance(value, _VALUE_KINDS):
        return kind, value
    torch = sys.modules.get("torch")  # device launches only: torch is loaded
    if torch is not None:
        if isinstance(value, torch.Tensor):
            _TENSOR_TYPES.add(kind)
            return _tensor_part(value)
        if kind is torch.dtype:
            return kind, value
    raise _Unseen


def key(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], grid: tuple[Any, ...], api: str,
        target: Any) -> tuple[Any, ...] | None:
    """What decides the launch's instructions, or None when something in it cannot be described."""
    try:
        closure = tuple(_part(c.cell_contents) for c in func.__closure__ or ())
        return (api, target, tuple((d.size, d.cores, d.cores_major) for d in grid), _part(args),
                _part(dict(kwargs)), _part(func.__defaults__), closure)
    # ValueError: an empty closure cell; TypeError: unorderable kwargs. An unhashable value (a slice in 3.11)
    # makes a key that checked_report and remember cannot look up: such a launch is always checked.
    except (_Unseen, ValueError, TypeError):
        return None


def checked_report(func: Callable[..., Any], signature: tuple[Any, ...] | None) -> CostReport | None:
    """The cost report of the checked launch of `signature`, if there was one."""
    if signature is None:
        return None
    try:
        return _checked.get(func, {}).get(signature)
    except TypeError:  # a callable without weak references: always checked
        return None


def remember(func: Callable[..., Any], signature: tuple[Any, ...] | None, report: CostReport) -> None:
    if signature is None:
        return
    try:
        known = _checked.setdefault(func, {})
        known[signature] = report
    except TypeError:  # a callable without weak references: always checked
        return
    if len(known) > _PER_KERNEL:
        del known[next(iter(known))]


def forget() -> None:
    """Check every signature again (tests; a kernel module reloaded with other globals)."""
    _checked.clear()
