"""Counters for ``torch.compile(backend="neuron")``: ``torch.neuron.get_dynamo_metrics()`` reads them."""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_FIELDS = ("graphs_compiled", "cache_hits", "partition_cache_hits", "recompiles", "partitions", "lowered_pieces",
           "eager_pieces", "compile_seconds")
_counts: dict[str, float] = dict.fromkeys(_FIELDS, 0)
_fallback_ops: Counter[str] = Counter()
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
    that ran eagerly inside compiled graphs (op -> nodes); compile_seconds: wall time spent building graphs."""
    with _lock:
        out = {k: (round(v, 3) if k == "compile_seconds" else int(v)) for k, v in _counts.items()}
        out["fallback_ops"] = dict(_fallback_ops)
    return out


def reset_dynamo_metrics() -> None:
    with _lock:
        for k in _counts:
            _counts[k] = 0
        _fallback_ops.clear()
        _graphs_seen.clear()
