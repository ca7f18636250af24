"""The bridge between neuron tensors and what executes a compiled program.

On the sim, a neuron tensor's storage is host RAM owned by the runtime. ``host_view`` gives a CPU tensor
aliasing it (same sizes/strides/offset) and ``adopt`` turns a CPU tensor (an XLA output buffer) into a
neuron tensor that owns it: no copies either way. Both come from the device layer (``torchneuron._C``);
CPU tensors pass through unchanged, so lowering and the compiler also work on CPU tensors.

XLA's buffers are device memory as a Trn host's would be: an adopted result is charged to its device while it
lives (``memory_allocated``, the HBM limit, OOM retry and message as any allocation), and a program's working
set (temporaries and results, by XLA's buffer assignment) is charged for the length of its run, so a program
that would not fit raises ``torch.OutOfMemoryError`` before it runs.

On nrt (a Trn host) device memory is not host memory: a NEFF runs on the device tensors themselves, with its
outputs preallocated on the device (``compiler/neff.py``); ``execute`` picks the path by the executable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

from .. import _C
from ..profiler import events as _events


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else 0


def _require_neuron(t: torch.Tensor) -> None:
    if t.device.type != "neuron":
        raise RuntimeError(f"torchneuron: cannot read a {t.device} tensor on the host; lowered programs take "
                           "neuron tensors (sim runtime) or CPU tensors")


def host_view(t: torch.Tensor) -> torch.Tensor:
    if t.device.type == "cpu":
        return t
    _require_neuron(t)
    return _C._host_view(t)


def adopt(cpu: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cpu":
        return cpu
    return _C._adopt_host_tensor(cpu, _index(device))


def device_of_inputs(ins: list[torch.Tensor]) -> torch.device:
    """The device a compiled program runs on: its first input's, or the current neuron device."""
    return ins[0].device if ins else torch.device("neuron", torch.neuron.current_device())


def _same(t: torch.Tensor) -> torch.Tensor:
    return t


def host_views(device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function mapping tensors to host views, specialised for the device (no per-call branching)."""
    return _same if device.type == "cpu" else _C._host_view


def adopter(device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
    if device.type == "cpu":
        return _same
    index = _index(device)
    adopt_ = _C._adopt_host_tensor
    return lambda t: adopt_(t, index)


def execute(executable, flat: list[torch.Tensor], device: torch.device, mutated: list[int],
            write_back: list[torch.Tensor] | None = None, event: ProgramEvent | None = None) -> list[torch.Tensor]:
    """Run a compiled program on ``flat`` (device tensors) in place: host views in (made contiguous where they
    are not), trailing mutation results written back into ``write_back[i]`` (default ``flat``) for each index
    in ``mutated``, the other results adopted as tensors of ``device`` without copies. Under a profiler the
    run is one device event (``event`` names it and estimates its Trainium time)."""
    if executable.backend == "neuronx-cc":
        with _program_event(event, device):
            return _execute_neff(executable, flat, device, mutated, write_back)
    if device.type == "cpu":
        outs = _run_on_host(executable, flat, device, event)
    else:
        drain(device)
        try:
            outs = _run_charged(executable, flat, device, event)
        except torch.OutOfMemoryError as e:
            raise _in_program(e, event, device) from None
    n = len(outs) - len(mutated)
    view = host_views(device)
    targets = flat if write_back is None else write_back
    for idx, out in zip(mutated, outs[n:]):
        view(targets[idx]).copy_(out)
    adopt_ = adopter(device)
    try:
        return [adopt_(o) for o in outs[:n]]
    except torch.OutOfMemoryError as e:
        raise _in_program(e, event, device) from None


def _in_program(e: torch.OutOfMemoryError, event: ProgramEvent | None, device: torch.device) -> torch.OutOfMemoryError:
    """The allocator's OOM with the program named, as an eager op's names the op."""
    name = (event or _UNNAMED).name
    return torch.OutOfMemoryError(f"{e} (while running {name} on {device} (compiled program))")


def _run_on_host(executable, flat: list[torch.Tensor], device: torch.device,
                 event: ProgramEvent | None) -> list[torch.Tensor]:
    view = host_views(device)
    hosts = [view(t) for t in flat]
    hosts = [h if h.is_contiguous() else h.contiguous() for h in hosts]
    with _program_event(event, device):
        return executable.run(hosts)


def _run_charged(executable, flat: list[torch.Tensor], device: torch.device,
                 event: ProgramEvent | None) -> list[torch.Tensor]:
    """``_run_on_host`` with the program's working set charged to ``device`` while it runs (raises
    torch.OutOfMemoryError, after emptying the cache, when it does not fit beside what is allocated)."""
    need = getattr(executable, "working_set_bytes", 0)  # without XLA's buffer assignment: 0
    if not need:
        return _run_on_host(executable, flat, device, event)
    index = _index(device)
    _C._charge_device_memory(index, need)
    try:
        return _run_on_host(executable, flat, device, event)
    finally:
        _C._release_device_memory(index, need)


class ProgramEvent:
    """How a compiled program appears under the profiler: its name, and its estimated Trainium time from
    its FX graph (computed on first use, only while a profiler records)."""

    def __init__(self, name: str, graph=None):
        self.name = name
        self._graph = graph
        self._cost: tuple[float | None, dict] | None = None

    def cost(self) -> tuple[float | None, dict]:
        if self._cost is None:
            self._cost = (None, {})
            if self._graph is not None:
                from ..estimator import estimate_graph

                est = estimate_graph(self._graph, mode="compiled")
                self._cost = (est.compiled.total_ns, {"target": est.target, "bound": est.compiled.bound,
                                                      "est_flops": est.flops, "est_bytes": est.compiled.hbm_bytes,
                                                      "ops": len(est.ops)})
                self._graph = None
        return self._cost


_UNNAMED = ProgramEvent("neuron::program")


def _program_event(event: ProgramEvent | None, device: torch.device):
    if device.type != "neuron":
        return contextlib.nullcontext()
    event = event or _UNNAMED
    return _events.device_event(event.name, device, kind="graph", cost=event.cost)


def _execute_neff(executable, flat: list[torch.Tensor], device: torch.device, mutated: list[int],
                  write_back: list[torch.Tensor] | None) -> list[torch.Tensor]:
    """``execute`` for a NEFF: on the device tensors (nrt runtime); CPU tensors go through the device."""
    if device.type == "cpu":
        outs = executable.run(flat)
    else:
        from .nrt_layout import dense

        outs = executable.execute([dense(t) for t in flat], device)
    n = len(outs) - len(mutated)
    targets = flat if write_back is None else write_back
    for idx, out in zip(mutated, outs[n:]):
        targets[idx].copy_(out)
    return outs[:n]


def call_on_host_views(fn: Callable[[list[torch.Tensor]], list], ins: list[torch.Tensor], device: torch.device,
                       strides: list[tuple[int, ...]] | None = None, event: ProgramEvent | None = None) -> list:
    """Run a CPU function (PyTorch's CPU kernels, inductor's code) on host views of ``ins``, as the device's
    program: its allocations come from the device's caching allocator, so fresh results become neuron tensors
    without copies (and count in the memory statistics and against the HBM limit); a result that views an
    input's memory becomes a view of that neuron tensor; in-place updates land in the device buffers.
    ``strides``: the strides ``fn`` was traced with; an input with others is passed as a copy with them."""
    if device.type == "cpu":
        return list(fn(list(ins)))
    drain(device)
    view = _C._host_view
    hosts, direct = [], {}
    for i, t in enumerate(ins):
        if not isinstance(t, torch.Tensor):
            hosts.append(t)
            continue
        h = view(t)
        if strides is not None and h.stride() != strides[i] and h.numel() > 1:
            h = torch.empty_strided(h.shape, strides[i], dtype=h.dtype).copy_(h)
        elif h.numel():
            direct[h.untyped_storage().data_ptr()] = t
        hosts.append(h)
    index = _index(device)
    try:
        with _program_event(event, device), _C._OutputsOnDevice(index):
            outs = fn(hosts)
    except torch.OutOfMemoryError as e:
        raise _in_program(e, event, device) from None
    hosts.clear()
    results: list = []
    for o in outs:
        if not isinstance(o, torch.Tensor):
            results.append(o)
            continue
        base = direct.get(o.untyped_storage().data_ptr()) if o.numel() else None
        if base is not None and base.dtype == o.dtype:  # a view of an input: a view of the neuron tensor
            results.append(base.as_strided(o.shape, o.stride(), o.storage_offset()))
        elif base is not None:  # a view in another dtype (view_as_complex, view(dtype)): the same memory
            results.append(torch.empty(0, dtype=o.dtype, device=base.device).set_(
                base.untyped_storage(), o.storage_offset(), o.shape, o.stride()))
        else:
            results.append(_C._from_host_result(o, index))
    return results


def drain(device: torch.device) -> None:
    """Wait for earlier work queued on the device's current stream (async copies) before reading its memory
    on the host."""
    _C._drain_current_stream(_index(device))


def outputs_on_device(index: int) -> _C._OutputsOnDevice:
    """Context manager: the calling thread's CPU allocations come from neuron device ``index`` (as inside a
    host kernel); results made there are handed over with ``from_host_result``."""
    return _C._OutputsOnDevice(index)


def from_host_result(t: torch.Tensor, index: int) -> torch.Tensor:
    return _C._from_host_result(t, index)
