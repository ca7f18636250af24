"""``get_executed_ops`` / ``get_fallback_ops`` / ``clear_op_tracking``: what ran, under AWS's op names.

AWS reports one ``"aten::<name>"`` entry per execution (no overload: ``aten::add``, not ``aten::add.Tensor``),
so scripts count them with ``collections.Counter`` or test ``"aten::linear" in get_executed_ops()``.
torchneuron counts every op that reaches the neuron device (``torchneuron.executed_ops()``); these lists are
built from those counts:

- executed: ops with a StableHLO lowering (on a Trn host they run on the NeuronCore);
- fallback: ops without one (on a Trn host they run on the CPU; on the simulator they run on the host path
  like every op, and are listed so that a script sees what would fall back on Trainium).

AWS registers some composite ops natively (``aten::linear``, ``aten::scaled_dot_product_attention``), so its
lists name them where PyTorch would otherwise only show their decomposition (``aten::addmm``). ``track_composites``
(installed when ``torch_neuronx`` is imported) counts those calls on neuron tensors at the autograd layer,
then runs ATen's own composite kernel, so gradients and results are unchanged.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from torchneuron import _C

_lock = threading.Lock()
_composites: Counter[str] = Counter()
_library: Any = None  # the torch.library registration, kept alive while the process runs

# Composite ATen ops AWS lists by their own name; their decompositions are what reaches the device here.
COMPOSITES = ("linear", "scaled_dot_product_attention")


def _short(op: str) -> str:
    return op.split(".", 1)[0]


def _has_lowering(op: str) -> bool:
    from torchneuron.lowering import coverage

    return coverage.has_lowering(op)


def _expanded(counts: dict[str, int], want_lowered: bool) -> list[str]:
    out: list[str] = []
    for op, n in sorted(counts.items()):
        if _has_lowering(op) == want_lowered:
            out.extend([_short(op)] * int(n))
    return out


def get_executed_ops() -> list[str]:
    """One ``"aten::name"`` per execution on neuron of an op with a device lowering (see the module docstring)."""
    with _lock:
        composites = sorted(_composites.elements())
    return composites + _expanded(dict(_C._executed_ops()), True)


def get_fallback_ops() -> list[str]:
    """One ``"aten::name"`` per execution of an op without a device lowering (the CPU's, on a Trn host)."""
    return _expanded(dict(_C._executed_ops()), False)


def clear_op_tracking() -> None:
    """Forget both lists (also resets ``torchneuron.executed_ops()``, which they are read from)."""
    with _lock:
        _composites.clear()
    _C._reset_executed_ops()


def _counting(name: str):
    import torch

    op = getattr(torch.ops.aten, name).default
    label = f"aten::{name}"
    is_compiling = torch.compiler.is_compiling
    composite = torch._C.DispatchKey.CompositeImplicitAutograd

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():  # a trace is not an execution; tracing decomposes as without this registration
            return op.decompose(*args, **kwargs)
        with _lock:
            _composites[label] += 1
        # ATen's C++ composite kernel, what runs eagerly without this registration (op.decompose would
        # prefer a Python decomposition registered for tracing where one exists)
        return op._op_dk(composite, *args, **kwargs)

    return kernel


def track_composites() -> None:
    """Count ``COMPOSITES`` on neuron tensors by AWS's names (once per process; see the module docstring)."""
    global _library
    if _library is not None:
        return
    import torch

    lib = torch.library.Library("aten", "IMPL")
    for name in COMPOSITES:
        lib.impl(name, _counting(name), "AutogradPrivateUse1")
    _library = lib


def untrack_composites() -> None:
    """Undo ``track_composites`` (``torchneuron._neuronx_alias.uninstall``: the process forgets the alias)."""
    global _library
    if _library is not None:
        _library._destroy()
        _library = None
