"""Launching a kernel on the simulator: host arrays in, an SPMD grid of kernel instances, outputs checked
and converted back, and the cost report for the launch.

The entry point is `launch(func, args, kwargs, grid, api)`; `kernel.Kernel` calls it. Array arguments go
through `host_arrays` (NumPy, torch CPU tensors, JAX arrays, or any kind registered there): each becomes a
`shared_hbm`/`hbm` tensor over a NumPy view of the caller's memory, zero-copy where the kind allows, so a
kernel that writes an input mutates the caller's array, as AWS's simulator does. Outputs come back as the
kind of the first array argument.

Launches with neuron, fake or meta tensors go through one hook, `torch_io` (torch is loaded only when a launch
has tensors): neuron tensors are simulated on their device buffers (kernel outputs allocated on the device via
`KernelRun.hbm_data`), fake/meta tensors make a shape-only launch, and on a Trn host the real `nki` runs them.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import cost, dtypes, host_arrays, launch_signatures, lnc, torch_io
from .core import alu, blas, context, data_dependence
from .core.buffers import HBM, SHARED_HBM, Storage
from .core.tensor import NkiTensor
from .core.ordering import add_schedule_edges
from .errors import (
    ERR_ANNOTATION,
    ERR_MEMORY,
    ERR_NESTED_SPMD,
    ERR_NOT_WRITTEN,
    NkiError,
    SourceLocation,
    fail,
    warn,
)
from .hardware import Target, current_target
from .instructions.tile import Tile


@dataclass
class GridDim:
    """One dimension of a launch grid. `cores` > 1 marks logical-NeuronCore sharding (`nl.nc(2)`):
    `cores_major` puts consecutive program ids on one core (`nl.spmd_dim(nl.nc(2), 2)`: core = i // 2),
    otherwise they alternate between cores (`nl.spmd_dim(2, nl.nc(2))`: core = i % 2)."""

    size: int
    cores: int = 1
    cores_major: bool = False

    def core_of(self, i: int) -> int:
        if self.cores <= 1:
            return 0
        return i // (self.size // self.cores) if self.cores_major else i % self.cores


@dataclass
class Launch:
    results: Any
    report: cost.CostReport | None  # None for a hardware launch: no estimate
    prints: list[tuple[str, Any]] = field(default_factory=list)


class _Input:
    __slots__ = ("original", "view", "tensor", "kind")

    def __init__(self, original: Any, view: host_arrays.HostView, tensor: NkiTensor,
                 kind: host_arrays.HostKind) -> None:
        self.original = original
        self.view = view
        self.tensor = tensor
        self.kind = kind


def _wrap_input(value: Any, buffer: Any, name: str) -> _Input | None:
    kind = host_arrays.kind_of(value)
    if kind is None:
        return None
    view = kind.to_numpy(value, name)
    arr = view.array
    dt = arr.dtype
    if dt is not dtypes.float32:  # float32 (most inputs) is an NKI dtype as it is
        if dt == np.float64:
            raise fail(ERR_MEMORY, f"kernel input {name!r} is float64; NeuronCores have no 64-bit types.",
                       "pass float32 (or bfloat16) arrays: arr.astype(np.float32).")
        dt = dtypes.as_dtype(dt)
    # a copied input remembers what the kernel wrote: only that goes back (HostView.write_back)
    st = Storage(arr.shape, dt, buffer, name, 0, data=arr.reshape(-1), track_writes=not view.writes_through)
    return _Input(value, view, Tile.whole(st), kind)


def _kernel_location(func: Callable[..., Any], want_return: bool) -> SourceLocation:
    """The kernel's `def` line, or its last `return` line for checks on what it returned."""
    code = func.__code__
    line = code.co_firstlineno
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
        node = tree.body[0]
        # getsource starts at the first decorator, which is co_firstlineno: ast line 1
        line = code.co_firstlineno + node.lineno - 1
        if want_return:
            returns = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Return)]
            if returns:
                line = code.co_firstlineno + max(returns) - 1
    except (OSError, SyntaxError, TypeError, IndexError):
        pass
    return SourceLocation(code.co_filename, line, code.co_name)


def _check_annotations(func: Callable[..., Any], bound: Any) -> None:
    if not getattr(func, "__annotations__", None):
        return  # nothing annotated (most kernels): no need to evaluate anything
    from .typing import TensorType

    try:  # kernels written under `from __future__ import annotations` keep them as strings
        annotations = inspect.get_annotations(func, eval_str=True)
    except Exception:  # noqa: BLE001 - an annotation we cannot evaluate is not ours to check
        annotations = {}
    for pname, value in bound.arguments.items():
        ann = annotations.get(pname)
        if isinstance(ann, TensorType) and ann.shape is not None and isinstance(value, NkiTensor):
            if tuple(ann.shape) != value.shape:
                raise NkiError(ERR_ANNOTATION, f"argument {pname!r} has shape {value.shape} but is annotated "
                               f"{tuple(ann.shape)}.", "pass an array of the annotated shape or fix the annotation.",
                               _kernel_location(func, False))


def _outputs(result: Any) -> list[NkiTensor]:
    if isinstance(result, NkiTensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _outputs(r)]
    if isinstance(result, dict):
        return [t for r in result.values() for t in _outputs(r)]
    return []


def _convert(result: Any, kind: host_arrays.HostKind) -> Any:
    if isinstance(result, NkiTensor):
        return kind.from_numpy(result.read())
    if isinstance(result, tuple):
        return tuple(_convert(r, kind) for r in result)
    if isinstance(result, list):
        return [_convert(r, kind) for r in result]
    if isinstance(result, dict):
        return {k: _convert(v, kind) for k, v in result.items()}
    return result


def _check_outputs(func: Callable[..., Any], outs: list[NkiTensor], api: str, inputs: list[_Input]) -> None:
    for t in outs:
        # NKI 0.3 made shared_hbm mandatory for outputs; legacy kernels may return nl.hbm tensors
        if t.buffer != SHARED_HBM and not (api == "legacy" and t.buffer.is_hbm):
            raise NkiError(ERR_MEMORY, f"kernel output `{t.name}` is in '{t.buffer.name}'; kernel outputs must be "
                           "allocated in shared_hbm.", "allocate it with nl.ndarray(shape, dtype, "
                           "buffer=nl.shared_hbm), store the result into it and return it.",
                           _kernel_location(func, True))
        # an input returned is the caller's memory, not a fresh output: what it holds unwritten is defined
        written = t.storage.written  # views of a storage share its flags: the identity finds an input's views
        if written is None or any(written is item.tensor.storage.written for item in inputs):
            continue
        seen = t.written_values()
        if not seen.any():
            raise NkiError(ERR_NOT_WRITTEN, f"kernel output `{t.name}` {t.shape} is never written.",
                           "nl.store / nisa.dma_copy the result into it before returning it.",
                           _kernel_location(func, True))
        if not seen.all():
            warn(f"kernel output `{t.name}` has {int((~seen).sum())} of {seen.size} elements never written; on "
                 "hardware they hold garbage.")


def grid_programs(grid: tuple[GridDim, ...]) -> list[tuple[tuple[int, ...], int]]:
    """Every program id with the physical core it runs on (grid dims marked nl.nc shard across cores)."""
    programs = []
    for ids in itertools.product(*(range(d.size) for d in grid)):
        core = 0
        for d, i in zip(grid, ids):
            if d.cores > 1:
                core = core * d.cores + d.core_of(i)
        programs.append((ids, core))
    return programs


@functools.lru_cache(maxsize=512)
def _signature(func: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(func)


@functools.lru_cache(maxsize=512)
def _plain_parameters(func: Callable[..., Any]) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """(names, required names) when every parameter is positional-or-keyword, as kernel signatures are:
    then binding is a few dict operations (inspect's bind costs more than a small kernel's instructions)."""
    params = _signature(func).parameters.values()
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return None
    return tuple(p.name for p in params), frozenset(p.name for p in params if p.default is inspect.Parameter.empty)


class _Bound:
    """What `inspect.BoundArguments` gives for positional-or-keyword parameters: the passed arguments in
    parameter order; the leading run of them positionally, the rest by name."""

    __slots__ = ("arguments", "names")

    def __init__(self, arguments: dict[str, Any], names: tuple[str, ...]) -> None:
        self.arguments = arguments
        self.names = names

    @property
    def args(self) -> tuple[Any, ...]:
        out = []
        for n in self.names:
            if n not in self.arguments:
                break
            out.append(self.arguments[n])
        return tuple(out)

    @property
    def kwargs(self) -> dict[str, Any]:
        positional = len(self.args)
        return {n: self.arguments[n] for n in self.names[positional:] if n in self.arguments}


def _bind(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        plain = _plain_parameters(func)
    except TypeError:  # an unhashable callable: inspect binds it every time
        return inspect.signature(func).bind(*args, **kwargs)
    if plain is not None:
        names, required = plain
        if len(args) <= len(names) and all(k in names[len(args):] for k in kwargs):
            given = dict(zip(names, args))
            given.update(kwargs)
            if required.issubset(given):
                return _Bound({n: given[n] for n in names if n in given}, names)
    return _signature(func).bind(*args, **kwargs)  # anything else, and inspect's errors for bad calls


def _bind_inputs(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 buffer: Any) -> tuple[Any, list[_Input]]:
    """Host arrays/tensors become HBM tensors; everything else (scalars, shapes, flags) passes through."""
    bound = _bind(func, args, kwargs)
    inputs: list[_Input] = []

    def wrap(value: Any, name: str) -> Any:
        if isinstance(value, (list, tuple)):  # e.g. a list of weight arrays
            return type(value)(wrap(v, f"{name}_{i}") for i, v in enumerate(value))
        if value is None or type(value) in _SCALARS:
            return value
        wrapped = _wrap_input(value, buffer, name)
        if wrapped is None:
            return value
        inputs.append(wrapped)
        return wrapped.tensor

    for pname, value in list(bound.arguments.items()):
        bound.arguments[pname] = wrap(value, pname)
    _check_annotations(func, bound)
    return bound, inputs


# kernel arguments that are never arrays (flags, sizes, names): no host kind is asked about them
_SCALARS = frozenset({bool, int, float, str})


def _write_back(inputs: list[_Input]) -> None:
    """Inputs the simulator had to copy (non-contiguous arrays and tensors) get the kernel's writes back."""
    for item in inputs:
        if not item.view.writes_through and item.view.write_back is not None:
            st = item.tensor.storage
            written = st.written
            if written is not None and written.any():
                shape = item.view.array.shape
                item.view.write_back(st.data.reshape(shape), written.reshape(shape))


def launch(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], grid: tuple[GridDim, ...] = (),
           api: str = "legacy", target: Target | None = None, schedule: tuple = ()) -> Launch:
    """`schedule`: `kernel.with_schedule`'s edges, ((instruction name, (producer names...)), ...)."""
    if context.active() is not None:
        raise fail(ERR_NESTED_SPMD, "a kernel was launched from inside another kernel.",
                   "call the inner function without @nki.jit (as a plain sub-kernel) and without a grid.")
    io = torch_io.open_launch(func, args, kwargs)  # the torch hook: None unless neuron / fake / meta tensors
    if io is None:
        return _simulate(func, args, kwargs, grid, api, target, schedule=schedule)
    if io.mode == torch_io.HARDWARE:
        from . import neuron_sdk

        return Launch(neuron_sdk.launch(func, args, kwargs, grid, api), None)
    with torch_io.launching(io):
        done = _simulate(func, args, kwargs, grid, api, target, io.hbm_data,
                         repeatable=io.mode == torch_io.DEVICE and not schedule, schedule=schedule)
        torch_io.finished(io, func, api, grid, args, kwargs, done.results, done.report)
    return done


def _simulate(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], grid: tuple[GridDim, ...],
              api: str, target: Target | None, hbm_data: Callable[..., Any] | None = None,
              repeatable: bool = False, schedule: tuple = ()) -> Launch:
    """`repeatable`: a device launch, which skips the bookkeeping for a signature already checked
    (`launch_signatures`; NumPy launches, the standalone simulator, are checked every time)."""
    target = target or current_target()
    signature = launch_signatures.key(func, args, kwargs, grid, api, target) if repeatable else None
    checked = launch_signatures.checked_report(func, signature)
    cores = math.prod(d.cores for d in grid) if grid else 1
    bound, inputs = _bind_inputs(func, args, kwargs, SHARED_HBM if cores > 1 else HBM)
    # a repeat of a checked signature keeps no cost model (KernelRun.issue returns before using it)
    models = [cost.CostModel(target) if checked is None else None for _ in range(cores)]
    shared: list[Storage] = []
    programs = grid_programs(grid) if grid else [((), 0)]
    sizes = tuple(d.size for d in grid)
    exchange = lnc.CoreExchange(cores) if api == "current" and cores > 1 else None
    steered: list[int] = []  # programs whose instructions tensor values decided

    def program(i: int) -> tuple[context.KernelRun, Any]:
        ids, core = programs[i]
        run = context.KernelRun(target, models[core], sizes, ids, api, shared=shared, exchange=exchange,
                                kernel_code=func.__code__, tensor_class=Tile, hbm_data=hbm_data,
                                accounting=checked is None)
        data_dependence.begin()
        with context.running(run), np.errstate(**alu.ENGINE_ERRORS), blas.launch_scope():
            result = func(*bound.args, **bound.kwargs)
        if data_dependence.steered():
            steered.append(i)
        if run.accounting:
            spilled = run.memory.finish()
            if schedule:
                add_schedule_edges(run, schedule)
            run.schedule()
            for iv in spilled:
                # a spilled PSUM tile is copied out to SBUF and back in (Vector engine, fp32 elements)
                elems = max(iv.nbytes // 4, 1)
                run.cost.compute("vector", 2 * max(cost.MIN_II, elems) + 2 * cost.SBUF_ACCESS_CYCLES)
            for nbytes in run.memory.sbuf_spills:
                run.cost.spill(nbytes, target.pmax)
        return run, result

    if exchange is not None:  # LNC=2: the cores run at once and may sendrecv / core_barrier
        finished = lnc.run_concurrently(len(programs), lnc.bind_exchange(exchange)(program))
    else:
        finished = [program(i) for i in range(len(programs))]
    results = finished[0][1]  # every program returns the same shared_hbm outputs
    _check_outputs(func, _outputs(results), api, inputs)
    _write_back(inputs)
    if checked is not None:
        report = checked.copy()  # the caller's own, as a checked launch's is
    else:
        report = cost.report(models, target, max(r.memory.peak["sbuf"] for r, _ in finished),
                             max(r.memory.peak["psum"] for r, _ in finished),
                             max(sum(iv.nbytes for iv in r.memory.spilled) for r, _ in finished),
                             max(sum(r.memory.sbuf_spills) for r, _ in finished))
        if not steered:
            launch_signatures.remember(func, signature, report)
    prints = [p for r, _ in finished for p in r.prints]
    kind = inputs[0].kind if inputs else host_arrays.kind_of(np.empty(0))
    return Launch(_convert(results, kind), report, prints)
