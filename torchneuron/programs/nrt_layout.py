"""Strided neuron tensors made dense on the device (``nrt`` runtime), for programs that read dense arrays.

A NEFF reads its inputs as dense row-major arrays; a transposed weight or a slice is not one. The host cannot
read nrt device memory, so instead of a round trip through the CPU the bytes the view spans are passed as a
1-D tensor (a view of the same storage) to a small program that rearranges them: a transpose when the view is
a permutation of a dense layout, else a gather of the view's elements. One program per (dtype, span, sizes,
strides), compiled and cached like any eager op; where one cannot be built the CPU does it.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

_lock = threading.Lock()
_programs: dict[tuple, Any] = {}  # key -> (NeffExecutable, constants) or None (no program: use the CPU)


def _span(t: torch.Tensor) -> int:
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def _dense_order(sizes: tuple[int, ...], strides: tuple[int, ...]) -> list[int] | None:
    """The dimension order in which the view is a dense row-major array (a permutation), or None."""
    order = sorted(range(len(sizes)), key=lambda d: (-strides[d], -sizes[d]))
    expected = 1
    for d in reversed(order):
        if sizes[d] != 1 and strides[d] != expected:
            return None
        expected *= sizes[d]
    return order


def _rearrange(flat: torch.Tensor, sizes: tuple[int, ...], strides: tuple[int, ...]) -> torch.Tensor:
    order = _dense_order(sizes, strides)
    if order is not None:
        dense = flat.reshape([sizes[d] for d in order])
        return dense.permute([order.index(d) for d in range(len(sizes))]).contiguous()
    index = torch.zeros((), dtype=torch.int64)
    for d, (n, s) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[d] = n
        index = index + (torch.arange(n, dtype=torch.int64) * s).view(shape)
    return flat[index]


def _build(dtype: torch.dtype, span: int, sizes: tuple[int, ...], strides: tuple[int, ...]):
    from .. import targets
    from ..compiler import driver
    from ..lowering.errors import LoweringError
    from ..lowering.trace import trace

    try:
        tg = trace(lambda flat: _rearrange(flat, sizes, strides), (torch.empty(span, dtype=dtype),))
        exe = driver.compile(tg.stablehlo, target=targets.current().name, kind="eager")
    except (LoweringError, driver.CompileError):
        return None
    exe.what = f"a dense copy of a {str(dtype).removeprefix('torch.')}{list(sizes)} view with strides {list(strides)}"
    return exe, tg.constants


def dense(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when it is dense row-major, else a dense copy on its device."""
    if t.is_contiguous() and not t.is_conj() and not t.is_neg():
        return t
    if t.is_conj() or t.is_neg() or t.dim() == 0:
        return t.resolve_conj().resolve_neg().contiguous()
    sizes, strides = tuple(t.shape), tuple(t.stride())
    key = (t.dtype, _span(t), sizes, strides)
    with _lock:
        found = key in _programs
        program = _programs.get(key)
    if not found:
        program = _build(t.dtype, key[1], sizes, strides)
        with _lock:
            _programs[key] = program
    if program is None:
        return t.contiguous()
    exe, constants = program
    flat = t.as_strided((key[1],), (1,), t.storage_offset())
    return exe.execute([flat, *(c.to(t.device) for c in constants)], t.device)[0]
