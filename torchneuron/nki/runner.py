"""Launching a kernel on the simulator: host arrays in, an SPMD grid of kernel instances, outputs checked
and converted back, and the cost report for the launch.

Inputs are wrapped zero-copy where NumPy allows, so a kernel that writes an input mutates the caller's array
(as AWS's simulator does). Torch tensors go through one hook, `torch_io` (which loads torch only when a launch has
them): neuron tensors are simulated on their device buffers, fake/meta tensors make a shape-only launch, CPU
tensors work as arrays; outputs come back as tensors of the same kind.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import cost, dtypes, lnc, torch_io
from .core import context
from .core.buffers import HBM, SHARED_HBM, Storage
from .core.tensor import NkiTensor
from .errors import ERR_ANNOTATION, ERR_MEMORY, ERR_NESTED_SPMD, ERR_NOT_WRITTEN, NkiError, SourceLocation, fail, warn
from .hardware import Target, current_target


@dataclass
class GridDim:
    """One dimension of a launch grid; `cores` > 1 marks logical-NeuronCore sharding (`nl.nc(2)`)."""

    size: int
    cores: int = 1


@dataclass
class Launch:
    results: Any
    report: cost.CostReport | None
    prints: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class _Input:
    original: Any
    array: np.ndarray
    tensor: NkiTensor
    copied: bool


def _wrap_input(value: Any, buffer: Any, name: str, io: Any) -> _Input | None:
    if io is not None and torch_io.is_torch(value):
        arr, copied = io.to_numpy(value, name), False
    elif isinstance(value, np.ndarray):
        arr, copied = value, False
    else:
        return None
    if arr.dtype == np.float64:
        raise fail(ERR_MEMORY, f"kernel input {name!r} is float64; NeuronCores have no 64-bit types.",
                   "pass float32 (or bfloat16) arrays: arr.astype(np.float32).")
    dt = dtypes.as_dtype(arr.dtype)
    if arr.flags.c_contiguous and arr.flags.writeable:
        flat = arr.reshape(-1)
    else:
        flat, copied = np.ascontiguousarray(arr).reshape(-1).copy(), True
    st = Storage(arr.shape, dt, buffer, name, 0, data=flat)
    st.dataless = io is not None and io.shape_only
    return _Input(value, arr, NkiTensor.whole(st), copied)


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


def _check_annotations(func: Callable[..., Any], bound: inspect.BoundArguments) -> None:
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


def _convert(result: Any, io: Any) -> Any:
    if isinstance(result, NkiTensor):
        return io.output(result) if io is not None else np.array(result.read())
    if isinstance(result, tuple):
        return tuple(_convert(r, io) for r in result)
    if isinstance(result, list):
        return [_convert(r, io) for r in result]
    if isinstance(result, dict):
        return {k: _convert(v, io) for k, v in result.items()}
    return result


def _check_outputs(func: Callable[..., Any], outs: list[NkiTensor]) -> None:
    for t in outs:
        if t.buffer != SHARED_HBM:
            raise NkiError(ERR_MEMORY, f"kernel output `{t.name}` is in '{t.buffer.name}'; kernel outputs must be "
                           "allocated in shared_hbm.", "allocate it with nl.ndarray(shape, dtype, "
                           "buffer=nl.shared_hbm), store the result into it and return it.",
                           _kernel_location(func, True))
        written = t.storage.written
        if written is None:
            continue
        seen = written[t.offsets()] if t.is_gather or t.size != t.storage.size else written
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
                core = core * d.cores + i % d.cores
        programs.append((ids, core))
    return programs


def _wrap_value(value: Any, name: str, buffer: Any, io: Any, inputs: list[_Input]) -> Any:
    # module level, not a closure: a self-recursive closure is a reference cycle that would keep the inputs
    # (device tensors, for torch launches) alive until the next garbage collection
    if isinstance(value, (list, tuple)):  # e.g. a list of weight arrays
        return type(value)(_wrap_value(v, f"{name}_{i}", buffer, io, inputs) for i, v in enumerate(value))
    wrapped = _wrap_input(value, buffer, name, io)
    if wrapped is None:
        return value
    inputs.append(wrapped)
    return wrapped.tensor


def _bind_inputs(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 buffer: Any, io: Any = None) -> tuple[inspect.BoundArguments, list[_Input]]:
    """Host arrays/tensors become HBM tensors; everything else (scalars, shapes, flags) passes through."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    inputs: list[_Input] = []
    for pname, value in list(bound.arguments.items()):
        bound.arguments[pname] = _wrap_value(value, pname, buffer, io, inputs)
    _check_annotations(func, bound)
    return bound, inputs


def _write_back(inputs: list[_Input]) -> None:
    """Inputs the simulator had to copy (non-contiguous, read-only) get the kernel's writes back; torch inputs
    are views of the tensor's own memory, so the writes land in the tensor."""
    for item in inputs:
        if not item.copied:
            continue
        new = item.tensor.storage.data.reshape(item.array.shape)
        if item.array.flags.writeable:
            item.array[...] = new


def launch(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], grid: tuple[GridDim, ...] = (),
           api: str = "legacy", target: Target | None = None) -> Launch:
    if context.active() is not None:
        raise fail(ERR_NESTED_SPMD, "a kernel was launched from inside another kernel.",
                   "call the inner function without @nki.jit (as a plain sub-kernel) and without a grid.")
    io = torch_io.open_launch(func, args, kwargs)
    if io is not None and io.mode == torch_io.HARDWARE:
        from . import trn_host

        return Launch(trn_host.launch(func, args, kwargs, grid, api), None)  # hardware: no cost estimate
    target = target or current_target()
    cores = math.prod(d.cores for d in grid) if grid else 1
    bound, inputs = _bind_inputs(func, args, kwargs, SHARED_HBM if cores > 1 else HBM, io)
    hbm_data = io.hbm_data if io is not None else None
    shape_only = io is not None and io.shape_only
    models = [cost.CostModel(target) for _ in range(cores)]
    shared: list[Storage] = []
    programs = grid_programs(grid) if grid else [((), 0)]
    sizes = tuple(d.size for d in grid)
    exchange = lnc.CoreExchange(cores) if api == "current" and cores > 1 else None

    def program(i: int) -> tuple[context.KernelRun, Any]:
        ids, core = programs[i]
        run = context.KernelRun(target, models[core], sizes, ids, api, shared=shared, exchange=exchange,
                                kernel_code=func.__code__, hbm_data=hbm_data, shape_only=shape_only)
        with context.running(run):
            return run, func(*bound.args, **bound.kwargs)

    if exchange is not None:  # LNC=2: the cores run at once and may sendrecv / core_barrier
        finished = lnc.run_concurrently(len(programs), lnc.bind_exchange(exchange)(program))
    else:
        finished = [program(i) for i in range(len(programs))]
    results = finished[0][1]  # every program returns the same shared_hbm outputs
    if not shape_only:
        _check_outputs(func, _outputs(results))
        _write_back(inputs)
    report = cost.report(models, target, max(r.memory.peak["sbuf"] for r, _ in finished),
                         max(r.memory.peak["psum"] for r, _ in finished))
    prints = [p for r, _ in finished for p in r.prints]
    converted = _convert(results, io)
    if io is not None:
        io.close()
    if shape_only and (rec := torch_io.recorder()) is not None:  # a Trn custom call is being built from this op
        rec.produced(rec.record(func, api, grid, args, kwargs), converted)
    return Launch(converted, report, prints)
