"""Torch tensors in and out of a simulator launch (the runner calls this only when a launch has torch tensors).

Which tensors a launch has decides how it runs:

* ``neuron`` tensors (sim runtime): the simulator works **on the device buffers**. Each input is a NumPy view
  of the tensor's device memory (``torchneuron._C._host_view``; the current stream is drained first, so
  earlier queued work has landed), kernel outputs are allocated as neuron tensors by the device's caching
  allocator and the simulator writes into their views. Nothing is copied to the CPU and back; a kernel that
  writes an input writes device memory, as on hardware. CPU tensors mixed in are refused, naming the device.
* ``neuron`` tensors on a Trn host (nrt runtime): the launch goes to the real ``nki`` package
  (``nki.neuron_sdk``), not to the simulator.
* fake or meta tensors (Dynamo, AOTAutograd, ``torch.export``, opcheck): **shape-only** launch. The kernel
  runs over zero-filled host pages of the inputs' shapes (it computes the output shapes, and every NKI check
  still applies); nothing touches device memory, and the outputs are fake/meta tensors of the shapes and
  dtypes the kernel allocated. (The values computed on the zeros are thrown away: the simulator's ops compute
  before they reach the per-instruction choke point, so they cannot be skipped there.)
* CPU tensors only: not this module's: host_arrays' built-in torch kind runs them (``nki.simulate`` on torch CPU
  tensors, zero-copy too). Refused inside ``torchneuron.nki_op`` / ``wrap_nki`` (``device_only``), whose
  kernels run on the neuron device.

The conversions are a ``host_arrays.HostKind`` ("torch-launch") that is active only while a launch opened here runs.
bf16 and fp8 map through ml_dtypes views of the same bytes.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import dtypes
from .core.scoped import scoped
from .errors import ERR_DTYPE, ERR_INVALID_ARG, ERR_MEMORY, fail
from .host_arrays import HostKind, HostView, register_host_kind

DEVICE, SHAPE, HARDWARE = "device", "shape", "hardware"

_local = threading.local()


_TORCH_TYPES: set[type] = set()  # tensor classes seen: asked of every kernel argument of every launch


def is_torch(x: Any) -> bool:
    kind = type(x)
    if kind in _TORCH_TYPES:
        return True
    if kind.__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "device"):
        if hasattr(kind, "detach") and hasattr(kind, "device"):  # the class has them: so has every instance
            _TORCH_TYPES.add(kind)
        return True
    return False


class LaunchRecorder:
    """Collects the kernel launches of shape-only runs (what a Trn host's custom call must carry): for each,
    the kernel, its API generation and grid, and every argument as a constant or a tensor named by where it
    comes from (an op input, a view of one, an earlier launch's output, or memory the op allocated)."""

    def __init__(self, inputs: list[Any]):
        self.inputs = inputs
        self.launches: list[dict[str, Any]] = []
        self._produced: dict[int, str] = {}

    def _source(self, t: Any) -> str:
        if id(t) in self._produced:
            return self._produced[id(t)]
        for i, x in enumerate(self.inputs):
            if t is x:
                return f"input:{i}"
        storage = t.untyped_storage()._cdata
        for i, x in enumerate(self.inputs):
            if x.untyped_storage()._cdata == storage:
                return f"input:{i}:view({list(t.shape)},{list(t.stride())},{t.storage_offset()})"
        return "allocated"

    def record(self, func: Any, api: str, grid: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        from .neuron_sdk import kernel_source

        def describe(v: Any) -> Any:
            if is_torch(v):
                return {"tensor": {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."),
                                   "from": self._source(v)}}
            if isinstance(v, (list, tuple)):
                return [describe(x) for x in v]
            if v is None or isinstance(v, (bool, int, float, str)):
                return {"const": v}
            return {"const": repr(v)}

        self.launches.append({"kernel": kernel_source(func), "api": api, "grid": [int(d.size) for d in grid],
                              "args": [describe(a) for a in args],
                              "kwargs": {k: describe(v) for k, v in kwargs.items()}})
        return len(self.launches) - 1

    def produced(self, index: int, results: Any) -> None:
        outs = results if isinstance(results, (tuple, list)) else [results]
        for k, t in enumerate(outs):
            if is_torch(t):
                self._produced[id(t)] = f"launch:{index}:{k}"


@contextmanager
def recording(inputs: list[Any]) -> Iterator[LaunchRecorder]:
    """Record the launches of shape-only runs on this thread (see ``LaunchRecorder``)."""
    previous = getattr(_local, "recorder", None)
    _local.recorder = rec = LaunchRecorder(inputs)
    try:
        yield rec
    finally:
        _local.recorder = previous


def recorder() -> LaunchRecorder | None:
    return getattr(_local, "recorder", None)


def device_only(what: str) -> scoped:
    """``with device_only(what):`` kernels launched inside refuse CPU tensors (the torch path: ``nki_op``
    bodies, ``wrap_nki`` calls)."""
    return scoped(_local, "device_only", what)


def _torch_dtypes() -> dict[Any, np.dtype]:
    import torch

    table = {torch.float32: dtypes.float32, torch.float16: dtypes.float16, torch.bfloat16: dtypes.bfloat16,
             torch.float8_e4m3fn: dtypes.float8_e4m3fn, torch.float8_e5m2: dtypes.float8_e5m2,
             torch.int8: dtypes.int8, torch.int16: dtypes.int16, torch.int32: dtypes.int32,
             torch.uint8: dtypes.uint8, torch.bool: dtypes.bool_}
    for name in ("uint16", "uint32"):
        if hasattr(torch, name):
            table[getattr(torch, name)] = getattr(dtypes, name)
    if hasattr(torch, "float8_e8m0fnu"):
        table[torch.float8_e8m0fnu] = dtypes.float8_e8m0fnu
    return table


_TO_NKI: dict[Any, np.dtype] = {}
_TO_TORCH: dict[np.dtype, Any] = {}


def nki_dtype(torch_dtype: Any, what: str = "tensor") -> np.dtype:
    if not _TO_NKI:
        _TO_NKI.update(_torch_dtypes())
        _TO_TORCH.update({v: k for k, v in _TO_NKI.items()})
    dt = _TO_NKI.get(torch_dtype)
    if dt is None:
        raise fail(ERR_DTYPE, f"{what} has dtype {torch_dtype}, which NeuronCores do not have (no 64-bit types, "
                   "no complex).", "cast it first, e.g. .float() or .to(torch.int32).")
    return dt


def torch_dtype(dt: np.dtype) -> Any:
    if not _TO_TORCH:
        _TO_NKI.update(_torch_dtypes())
        _TO_TORCH.update({v: k for k, v in _TO_NKI.items()})
    dt = dtypes.storage_dtype(dt)
    out = _TO_TORCH.get(dt)
    if out is None:
        raise fail(ERR_DTYPE, f"kernel output dtype {dtypes.name(dt)} has no torch equivalent.",
                   "return float32, bfloat16, float16, fp8 (e4m3fn/e5m2) or integer outputs.")
    return out


# torch dtype -> the integer dtype whose bits NumPy can view, or None when .numpy() takes the tensor as it is
_BITS: dict[Any, Any] = {}


def _bits_dtype(torch_dt: Any) -> Any:
    import torch

    dt = nki_dtype(torch_dt)
    if torch_dt == torch.bfloat16:
        bits = torch.int16
    elif dt.type.__module__.startswith("ml_dtypes"):
        bits = torch.uint8
    else:
        bits = None
    _BITS[torch_dt] = bits
    return bits


def _numpy_view(t: Any) -> np.ndarray:
    """A NumPy array over the same bytes as CPU tensor ``t`` (strides kept); ml_dtypes for bf16/fp8."""
    torch_dt = t.dtype
    try:
        bits = _BITS[torch_dt]
    except KeyError:
        bits = _bits_dtype(torch_dt)
    if bits is None:
        return t.numpy()
    return t.view(bits).numpy().view(_TO_NKI[torch_dt])


@functools.lru_cache(maxsize=1)
def _host_bridge() -> Any:
    from ..programs import host_bridge  # loads torch: imported by the first device launch, once

    return host_bridge


def _address(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


class TorchIO:
    """The torch side of one launch (``host_arrays.HostKind`` "torch-launch" consults it while the launch runs): how
    inputs become arrays, where outputs are allocated, and how returned tiles become tensors."""

    def __init__(self, mode: str, device: Any, kernel: str):
        self.mode = mode
        self.device = device
        self.kernel = kernel
        self.profile_start_ns: int | None = None  # set when torch.profiler records this device launch
        self._view: Any = None  # host_bridge's host view for this launch's device (every tensor is on it)
        # start address of a flat array -> (the tensor whose memory it is, its byte size)
        self._owners: dict[int, tuple[Any, int]] = {}
        # kernel outputs by the array every NumPy view of their memory has as `.base` (id -> (that array, the
        # tensor, its byte size)): a returned tile is found without asking NumPy for its address
        self._outputs: dict[int, tuple[np.ndarray, Any, int]] = {}

    def close(self) -> None:
        """The launch is over: drop the references to its tensors (the caller owns them now)."""
        self._owners.clear()
        self._outputs.clear()

    @property
    def shape_only(self) -> bool:
        return self.mode == SHAPE

    def _host(self, t: Any) -> Any:
        if self.mode == DEVICE:
            if self._view is None:
                self._view = _host_bridge().host_views(self.device)
            return self._view(t)  # drains the stream: queued work on `t` has landed
        return t

    # ---- inputs ----
    def to_numpy(self, t: Any, name: str) -> HostView:
        """The array the simulator binds for input ``t``: a view of its device memory or, shape-only, zero
        pages of its shape (the kernel's writes to them go nowhere)."""
        dt = _TO_NKI.get(t.dtype)
        if dt is None:  # the message is made only for the error
            dt = nki_dtype(t.dtype, f"kernel {self.kernel} argument {name!r}")
        if self.mode == SHAPE:
            return HostView(np.zeros(tuple(int(s) for s in t.shape), dtypes.storage_dtype(dt)), True)
        t = t.detach()
        host = self._host(t)
        if not host.is_contiguous():  # the simulator's storages are flat: copy in, copy the kernel's writes back
            arr = _numpy_view(host.contiguous())

            def back(new: np.ndarray, written: np.ndarray) -> None:
                np.copyto(_numpy_view(host), new.reshape(host.shape), where=written.reshape(host.shape))
            return HostView(arr, False, back)
        arr = _numpy_view(host)
        self._owners[host.data_ptr()] = (t, arr.nbytes)  # the view's address (cheaper than NumPy's)
        return HostView(arr, True)

    # ---- outputs ----
    def hbm_data(self, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray | None:
        """Flat memory for a kernel output: a fresh tensor on the launch's device (the caching allocator), so
        the simulator writes the result where the caller gets it. None: the simulator's own memory."""
        if self.mode != DEVICE:
            return None
        import torch

        # allocated in the output's own shape: returning it whole then needs no view op
        t = torch.empty(shape, dtype=_TO_TORCH.get(dt) or torch_dtype(dt), device=self.device)
        host = self._host(t)
        flat = _numpy_view(host).reshape(-1)
        self._owners[host.data_ptr()] = (t, flat.nbytes)
        base = flat.base
        if isinstance(base, np.ndarray) and base.nbytes == flat.nbytes:
            self._outputs[id(base)] = (base, t, flat.nbytes)
        return flat

    def _whole_tensor(self, arr: np.ndarray) -> Any:
        """The output or input tensor whose whole memory C-contiguous ``arr`` is, or None."""
        # a C-contiguous view as large as an output's whole memory, inside it, starts where it starts: that
        # output (found by the array its views share as `.base`, without asking NumPy for the address)
        base = arr.base
        out = self._outputs.get(id(base)) if base is not None else None
        if out is not None and out[0] is base:
            _, t, nbytes = out
        else:
            t, nbytes = self._owners.get(_address(arr), (None, 0))
        return t if t is not None and nbytes == arr.nbytes and _TO_NKI[t.dtype] == arr.dtype else None

    def from_numpy(self, arr: np.ndarray) -> Any:
        """A returned tile's values as a torch tensor: the tensor that owns the memory when the tile is a
        whole output (or input) allocation, else a new tensor on the device holding a copy."""
        import torch

        shape = arr.shape  # Python ints
        if self.mode == SHAPE:
            return torch.empty(shape, dtype=torch_dtype(arr.dtype), device=self.device)
        t = self._whole_tensor(arr) if arr.flags.c_contiguous else None
        if t is not None:
            return t if t.shape == shape else t.view(shape)
        t = torch.empty(shape, dtype=torch_dtype(arr.dtype), device=self.device)
        _numpy_view(self._host(t))[...] = arr
        return t


def _tensors(values: Any, out: list[tuple[str, Any]], name: str) -> None:
    if is_torch(values):
        out.append((name, values))
    elif isinstance(values, (list, tuple)):
        for i, v in enumerate(values):
            _tensors(v, out, f"{name}[{i}]")
    elif isinstance(values, dict):
        for k, v in values.items():
            _tensors(v, out, f"{name}[{k!r}]")


@functools.lru_cache(maxsize=256)
def _parameter_names(func: Any) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return ()


def open_launch(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TorchIO | None:
    """The launch's torch side, or None when it has no torch tensors (a NumPy launch)."""
    found: list[tuple[str, Any]] = []
    names = _parameter_names(func)
    for i, a in enumerate(args):
        _tensors(a, found, names[i] if i < len(names) else f"#{i}")
    for k, v in kwargs.items():
        _tensors(v, found, k)
    if not found:
        return None
    kernel = func.__name__
    fake_tensor, is_wrapped = _shape_only_kinds()
    devices = []
    for _, t in found:
        device = t.device
        if isinstance(t, fake_tensor) or device.type == "meta" or is_wrapped(t):
            return TorchIO(SHAPE, device, kernel)  # the first shape-only tensor's device
        devices.append(device)
    first = devices[0]
    if first.type == "neuron" and all(d == first for d in devices):  # the usual launch: nothing to refuse
        return TorchIO(HARDWARE if _trn_host().on_trn_host() else DEVICE, first, kernel)
    neuron = sorted({d for d in devices if d.type == "neuron"}, key=str)
    strict = getattr(_local, "device_only", None)
    if len(neuron) > 1:
        raise fail(ERR_INVALID_ARG, f"kernel {kernel} got tensors on {', '.join(map(str, neuron))}; one launch runs "
                   "on one NeuronCore.", f"move every argument to one device, e.g. .to('{neuron[0]}').")
    for name, t in found:
        if t.device.type not in ("neuron", "cpu"):
            raise fail(ERR_MEMORY, f"kernel {kernel} argument {name} is on {t.device}; NKI kernels run on the neuron "
                       "device.", "move it with .to('neuron').")
        if t.device.type == "cpu" and (neuron or strict):
            where = f"neuron device {neuron[0]}" if neuron else "the neuron device"
            inside = f" (called through {strict})" if strict else ""
            raise fail(ERR_MEMORY, f"kernel {kernel}{inside}: argument {name} {tuple(t.shape)} is a cpu tensor, "
                       f"but NKI kernels run on {where}.", f"move it there first: {name}.to("
                       f"'{neuron[0] if neuron else 'neuron'}').")
    if not neuron:
        return None  # CPU tensors only: the standalone simulator (host_arrays' built-in torch kind, zero-copy too)
    return TorchIO(HARDWARE if _trn_host().on_trn_host() else DEVICE, neuron[0], kernel)


@functools.lru_cache(maxsize=1)
def _shape_only_kinds() -> tuple[type, Any]:
    """(FakeTensor, functorch's wrapped-tensor test): imported by the first torch launch, once."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    return FakeTensor, torch._C._functorch.is_functorch_wrapped_tensor


@functools.lru_cache(maxsize=1)
def _trn_host() -> Any:
    from . import neuron_sdk

    return neuron_sdk


def _launch_io() -> TorchIO:
    io = getattr(_local, "launch", None)
    assert io is not None, "the torch-launch host kind is used only inside `launching`"
    return io


class launching:
    """``with launching(io):`` the simulator runs a launch of ``io``: its torch tensors convert through ``io``
    (the host kind below). A class, not a generator context: it is entered once per launch."""

    __slots__ = ("io", "previous")

    def __init__(self, io: TorchIO) -> None:
        self.io = io
        self.previous: TorchIO | None = None

    def __enter__(self) -> TorchIO:
        io = self.io
        if io.mode == DEVICE:
            _profiler_start(io)
        self.previous = getattr(_local, "launch", None)
        _local.launch = io
        return io

    def __exit__(self, *exc: object) -> None:
        _local.launch = self.previous
        self.io.close()


def _profiler_start(io: TorchIO) -> None:
    """A device launch under ``torch.profiler`` (PrivateUse1) is one "kernel" device event: the earlier work
    queued on the stream is drained first, so the event times the kernel alone."""
    events = _profiler_events()
    if events.recording():
        from ..programs import host_bridge

        host_bridge.drain(io.device)
        io.profile_start_ns = events.now_ns()


@functools.lru_cache(maxsize=1)
def _profiler_events() -> Any:
    from ..profiler import events

    return events


def finished(io: TorchIO, func: Any, api: str, grid: tuple[Any, ...], args: tuple[Any, ...],
             kwargs: dict[str, Any], results: Any, report: Any = None) -> None:
    """After a launch: a shape-only one is recorded when a Trn custom call is being built from its op; a
    profiled device launch becomes a device event carrying the cost model's estimate (``report``)."""
    if io.shape_only and (rec := recorder()) is not None:
        rec.produced(rec.record(func, api, grid, args, kwargs), results)
    if io.profile_start_ns is not None:
        from ..profiler import events

        meta: dict[str, Any] = {"grid": [int(d.size) for d in grid], "api": api}
        if report is not None:
            meta.update(target=report.target, bound=report.bound, est_flops=report.flops,
                        est_bytes=report.dma_bytes)
        events.record_device_event(func.__name__, io.device, io.profile_start_ns, events.now_ns(), kind="kernel",
                                   estimated_ns=report.latency_ns if report is not None else None, metadata=meta)


# Ahead of host's built-in torch kind, but only while a launch opened here runs (neuron / fake / meta tensors).
register_host_kind(HostKind("torch-launch", lambda x: is_torch(x) and getattr(_local, "launch", None) is not None,
                            lambda t, name: _launch_io().to_numpy(t, name),
                            lambda arr: _launch_io().from_numpy(arr)))
