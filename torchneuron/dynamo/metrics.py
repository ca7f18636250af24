"""Counters for ``torch.compile(backend="neuron")``: ``torch.neuron.get_dynamo_metrics()`` reads them."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator

_lock = threading.Lock()
_FIELDS = ("graphs_compiled", "cache_hits", "partition_cache_hits", "recompiles", "partitions", "lowered_pieces",
           "eager_pieces", "compile_seconds")
_counts: dict[str, float] = dict.fromkeys(_FIELDS, 0)
_fallback_ops: Counter[str] = Counter()
# where compile time goes; "dynamo" is derived from Dynamo's own timers (get_dynamo_metrics)
PHASES = ("dynamo", "aot_autograd", "partition", "lowering", "torch_mlir", "executable", "cross_check",
          "check_background")
_phases: dict[str, float] = dict.fromkeys(PHASES, 0.0)
_backend_seconds = [0.0]
_graphs_seen: set[str] = set()


def graph_seen(code: str) -> bool:
    """Whether Dynamo handed over this graph before (its code, without shapes): a second time is a recompile."""
    with _lock:
        seen = code in _graphs_seen
        _graphs_seen.add(code)
    return seen


def add(name: str, value: float = 1) -> None:
    with _lock:
        _counts[name] += value


def add_phase(name: str, seconds: float) -> None:
    with _lock:
        _phases[name] += seconds


@contextlib.contextmanager
def timed_phase(name: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        add_phase(name, time.perf_counter() - t0)


@contextlib.contextmanager
def backend_call() -> Iterator[None]:
    """Around the backend: what it spends outside partitioning and building programs is AOTAutograd's."""
    with _lock:
        before = _phases["partition"] + _counts["compile_seconds"]
    t0 = time.perf_counter()
    try:
        yield
    finally:
        total = time.perf_counter() - t0
        with _lock:
            _backend_seconds[0] += total
            _phases["aot_autograd"] += total - (_phases["partition"] + _counts["compile_seconds"] - before)


def _dynamo_frames() -> float:
    """Dynamo's own timer of its frame compiles, this backend included (0 while Dynamo is not loaded)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return sum(utils.compilation_time_metrics.get("_compile.compile_inner", [])) if utils else 0.0


def _dynamo_seconds() -> float:
    return max(_dynamo_frames() - _frames_at_reset[0] - _backend_seconds[0], 0.0)


_frames_at_reset = [0.0]


def fallback(op: str) -> None:
    with _lock:
        _fallback_ops[op] += 1


def get_dynamo_metrics() -> dict:
    """graphs_compiled: static-shape graphs built (one per AOT graph and input shape); cache_hits: graphs whose
    StableHLO came from the on-disk graph cache (no tracing, no torch-mlir); partition_cache_hits: AOTAutograd
    forward/backward splits loaded from the cache (no min-cut partitioning); recompiles: a graph Dynamo compiled
    again (a new static shape, a failed guard) or a dynamic graph specialised for a new shape; partitions: graphs
    split into more than one piece; lowered_pieces / eager_pieces: pieces compiled to StableHLO / run op by op on
    the device; fallback_ops: ops without a lowering
    that ran eagerly inside compiled graphs (op -> nodes); compile_seconds: wall time spent building graphs;
    phase_seconds: compile time by phase (dynamo: tracing bytecode and building guards; aot_autograd: the
    joint graph, functionalisation, runtime wrappers; partition: the forward/backward split; lowering: pieces
    to FX and decompositions; torch_mlir: FX to StableHLO; executable: XLA:CPU or neuronx-cc compiles and cache
    loads; cross_check: the StableHLO cross-check of a new piece's first call, as far as the caller waits for
    it; check_background: the part of those checks a worker thread runs beside the program, off the critical
    path)."""
    with _lock:
        out = {k: (round(v, 3) if k == "compile_seconds" else int(v)) for k, v in _counts.items()}
        out["fallback_ops"] = dict(_fallback_ops)
        phases = dict(_phases, dynamo=_dynamo_seconds())
        out["phase_seconds"] = {k: round(phases[k], 3) for k in PHASES}
    return out


def reset_dynamo_metrics() -> None:
    with _lock:
        for k in _counts:
            _counts[k] = 0
        for k in _phases:
            _phases[k] = 0.0
        _frames_at_reset[0] = _dynamo_frames()
        _backend_seconds[0] = 0.0
        _fallback_ops.clear()
        _graphs_seen.clear()
