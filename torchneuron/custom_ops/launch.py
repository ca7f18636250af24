"""A bare ``wrap_nki(kernel)[grid](...)`` launch as one node of a compiled graph.

Two generic custom ops carry every such launch:

* ``torchneuron::nki_launch(int launch, Tensor[] tensors) -> Tensor[]``: kernels that return their outputs;
* ``torchneuron::nki_launch_(int launch, Tensor[] read, Tensor(a!)[] written) -> ()``: kernels that return
  nothing and write arguments. The arguments the kernel writes are declared written (and only those), so
  AOTAutograd functionalizes the call and copies written graph inputs back, as for any mutating custom op.

``launch`` names a launch plan: the gridded kernel and where each argument comes from (a tensor of the op's
lists, or a constant). ``plan`` makes it at trace time in plain Python (Dynamo calls it with the constants it
traced instead of tracing it, ``assume_constant_result``): it runs the kernel once shape-only on zero pages of
the traced shapes, through a host kind of its own that records which arguments the kernel wrote, and so knows
what the kernel returns and which op to use. A kernel that both returns outputs and writes an argument is
refused there, naming the kernel and the argument.

Both ops are in ``registry``: ``torch.compile(backend="neuron")`` runs them as NKI op nodes (eager pieces on the
simulator; custom calls on a Trn host), and their fake implementation is the launch itself on fake tensors
(shape-only).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np
import torch

from ..nki import dtypes, host_arrays, torch_io
from ..nki.errors import ERR_INVALID_ARG, fail
from ..nki.kernel import Kernel, as_kernel
from . import registry
from .op import _unaliased

FUNCTIONAL, MUTATING = "torchneuron::nki_launch", "torchneuron::nki_launch_"

TENSOR = "tensor"  # a slot filled by a tensor of the op's lists
NONE, ONE, TUPLE, LIST = "none", "one", "tuple", "list"  # what the kernel returns


class Plan:
    __slots__ = ("kernel", "args", "kwargs", "returns", "written")

    def __init__(self, kernel: Kernel, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]):
        self.kernel = kernel    # gridded
        self.args = args        # per positional argument: ("tensor", dtype) or ("const", value)
        self.kwargs = kwargs    # (name, slot) pairs
        self.returns = NONE     # NONE / ONE / TUPLE / LIST
        self.written: tuple[int, ...] = ()  # the tensors (in slot order) the kernel writes

    @property
    def name(self) -> str:
        return self.kernel.func.__name__

    def call_args(self, tensors: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        it = iter(tensors)

        def fill(slot: tuple[Any, ...]) -> Any:
            return next(it) if slot[0] == TENSOR else slot[1]

        return tuple(fill(s) for s in self.args), {k: fill(s) for k, s in self.kwargs}

    def merge(self, read: list[Any], written: list[Any]) -> list[Any]:
        """The tensors in slot order, from the mutating op's two lists."""
        out: list[Any] = []
        r, w = iter(read), iter(written)
        for i in range(len(read) + len(written)):
            out.append(next(w) if i in self.written else next(r))
        return out


_PLANS: dict[int, Plan] = {}  # launch id -> plan
_BY_KEY: dict[Any, int] = {}   # (kernel object, api, grid, slots) -> launch id
_KEEP: list[Any] = []          # the kernels of _BY_KEY's keys stay alive, so their id() stays theirs
_LOCK = threading.Lock()


def slot(value: Any, shaped: bool = False) -> tuple[Any, ...]:
    """How one argument travels: tensors through the op (their dtype, and with ``shaped`` their shape, go to
    ``plan``), anything else as a constant of the plan. Dynamo traces this: isinstance checks and tuples only."""
    if isinstance(value, torch.Tensor):
        return (TENSOR, value.dtype, tuple(value.shape)) if shaped else (TENSOR, value.dtype)
    return ("const", value)


UNPLANNED = -1  # plan's answer for a launch never probed, when the slots carry no shapes to probe it with


def plan(kernel: Any, api: str, grid: Any, args: tuple[Any, ...],
         kwargs: tuple[tuple[str, Any], ...]) -> tuple[int, str, tuple[int, ...]]:
    """(launch id, what the kernel returns, the tensors it writes) for ``kernel[grid]`` with these argument
    slots. Called with Python constants only, outside Dynamo's tracing. The probe runs once per kernel, grid
    and slots (what a kernel returns and writes does not depend on its shapes), on the shapes of the first
    shaped call; without shapes, an unprobed launch is ``UNPLANNED``."""
    bare = lambda s: s[:2] if s[0] == TENSOR else s  # noqa: E731
    args_bare, kwargs_bare = tuple(bare(s) for s in args), tuple((n, bare(s)) for n, s in kwargs)
    key = (id(kernel), api, repr(grid), _hashable(args_bare), _hashable(kwargs_bare))
    with _LOCK:
        index = _BY_KEY.get(key)
    if index is None:
        tensor_slots = [s for s in (*args, *(s for _, s in kwargs)) if s[0] == TENSOR]
        if any(len(s) < 3 for s in tensor_slots):
            return UNPLANNED, NONE, ()
        k = as_kernel(kernel, api)
        if grid is not None:
            k = k[grid]
        p = Plan(k, args_bare, kwargs_bare)
        # outside any tracing mode (non-strict torch.export runs this under its fake and proxy modes): the
        # probe's meta outputs are not graph nodes
        with torch.utils._python_dispatch._disable_current_modes():
            _probe(p, tensor_slots)
        with _LOCK:
            index = _BY_KEY.get(key)
            if index is None:
                index = _launch_id(p, key[1:])
                _BY_KEY[key] = index
                _PLANS[index] = p
                _KEEP.append(kernel)
    p = _PLANS[index]
    return index, p.returns, p.written


def _launch_id(p: Plan, rest: tuple[Any, ...]) -> int:
    """An id from the kernel's code, grid and slots, not from the order of compiles: graphs (and the compile
    caches keyed on their code) name the same launch alike in every process. Another kernel object with the
    same code (a closure over other values) gets the next free id."""
    func = p.kernel.func
    code = getattr(func, "__code__", None)
    what = (getattr(func, "__module__", ""), getattr(func, "__qualname__", repr(func)),
            code.co_code.hex() if code is not None else "", repr(rest))
    index = int.from_bytes(hashlib.sha256(repr(what).encode()).digest()[:7], "big")
    while index in _PLANS:
        index += 1
    return index


def _hashable(slots: Any) -> Any:
    if isinstance(slots, (tuple, list)):
        return tuple(_hashable(s) for s in slots)
    try:
        hash(slots)
        return slots
    except TypeError:
        return repr(slots)


# ---- the probe: one shape-only run that also sees which arguments the kernel writes ----

class _ProbeArg:
    """A tensor argument of the probe: zero pages of its shape, copied in so the simulator tracks writes."""

    __slots__ = ("shape", "dtype", "written")

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        self.shape = shape
        self.dtype = dtype
        self.written = False


def _probe_view(arg: _ProbeArg, name: str) -> host_arrays.HostView:
    dt = dtypes.storage_dtype(torch_io.nki_dtype(arg.dtype, f"argument {name!r}"))

    def wrote(new: np.ndarray, mask: np.ndarray) -> None:  # called only when the kernel wrote some element
        arg.written = True

    return host_arrays.HostView(np.zeros(arg.shape, dt), False, wrote)


def _probe_output(arr: np.ndarray) -> Any:
    return torch.empty(arr.shape, dtype=torch_io.torch_dtype(arr.dtype), device="meta")


host_arrays.register_host_kind(host_arrays.HostKind("wrap_nki-probe", lambda x: type(x) is _ProbeArg,
                                                    _probe_view, _probe_output))


def _probe(p: Plan, tensor_slots: list[tuple[Any, ...]]) -> None:
    probes = [_ProbeArg(tuple(int(d) for d in s[2]), s[1]) for s in tensor_slots]
    args, kwargs = p.call_args(probes)
    result = p.kernel(*args, **kwargs)
    p.written = tuple(i for i, a in enumerate(probes) if a.written)
    if result is None:
        p.returns = NONE
    elif isinstance(result, torch.Tensor):
        p.returns = ONE
    elif isinstance(result, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in result):
        p.returns = TUPLE if isinstance(result, tuple) else LIST
    else:
        raise fail(ERR_INVALID_ARG, f"kernel {p.name} returned {type(result).__name__}; inside torch.compile a "
                   "wrap_nki launch returns nothing, a tensor, or a tuple or list of tensors.",
                   "return the output tensors the kernel allocates.")
    if p.returns != NONE and p.written:
        names = ", ".join(repr(n) for n in _tensor_names(p, p.written))
        raise fail(ERR_INVALID_ARG, f"kernel {p.name} returns outputs and also writes its argument {names}: inside "
                   "torch.compile a wrap_nki launch either returns its outputs or writes arguments, not both.",
                   f"return a new output instead of writing {names}, or launch the kernel from a "
                   f"torchneuron.nki_op(..., mutates_args=({names},)) function, or call it outside the compiled "
                   "function.")


def _tensor_names(p: Plan, which: tuple[int, ...]) -> list[str]:
    from ..nki.runner import _signature

    try:
        params = list(_signature(p.kernel.func).parameters)
    except (TypeError, ValueError):
        params = []
    names = [params[i] if i < len(params) else f"#{i}" for i, s in enumerate(p.args) if s[0] == TENSOR]
    names += [n for n, s in p.kwargs if s[0] == TENSOR]
    return [names[i] for i in which]


# ---- the ops ----

def _run(launch: int, tensors: list[torch.Tensor]) -> Any:
    p = _PLANS[int(launch)]  # int(): a graph recompiled with dynamic ints passes the id as a SymInt
    args, kwargs = p.call_args(tensors)
    with torch_io.device_only("torchneuron.wrap_nki"):
        return p.kernel(*args, **kwargs)


def _run_returning(launch: int, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    result = _run(launch, tensors)
    if result is None:
        return []
    out = [result] if isinstance(result, torch.Tensor) else list(result)
    # a custom op may not return its input: an argument the kernel returns comes back as a copy
    return _unaliased(out, (tensors,), {})


def _run_writing(launch: int, read: list[torch.Tensor], written: list[torch.Tensor]) -> None:
    _run(launch, _PLANS[int(launch)].merge(read, written))


@torch.library.custom_op(FUNCTIONAL, mutates_args=())
def nki_launch(launch: int, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return _run_returning(launch, tensors)


@nki_launch.register_fake
def _(launch: int, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return _run_returning(launch, tensors)


@torch.library.custom_op(MUTATING, mutates_args=("written",))
def nki_launch_(launch: int, read: list[torch.Tensor], written: list[torch.Tensor]) -> None:
    _run_writing(launch, read, written)


@nki_launch_.register_fake
def _(launch: int, read: list[torch.Tensor], written: list[torch.Tensor]) -> None:
    _run_writing(launch, read, written)


registry.add(FUNCTIONAL, _run_returning)
registry.add(MUTATING, _run_writing)


def results(outs: list[torch.Tensor], returns: str) -> Any:
    """The functional op's list back in the form the kernel returns."""
    if returns == ONE:
        return outs[0]
    if returns == TUPLE:
        return tuple(outs)
    if returns == LIST:
        return list(outs)
    return None
