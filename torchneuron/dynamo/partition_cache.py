"""AOTAutograd's forward/backward partition, kept in the compile cache.

The min-cut partitioner is the largest part of a warm compile (0.4 s for a transformer block, most of it
importing inductor's pattern matcher for its CSE pass). Its result depends only on the joint graph, the
shapes and dtypes of its values, the partitioner's settings and the software doing it, so a process that has
partitioned the same joint graph before loads the two graphs instead (with their fake-tensor metadata,
recreated in the joint graph's fake mode, which AOTAutograd reads next).

Graphs with symbolic sizes are partitioned afresh every time (their metadata belongs to one ShapeEnv).
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
import torch.fx as fx

from . import graph_cache, metrics

_FORMAT = "partition-1"


def partition(joint: fx.GraphModule, joint_inputs: Any, *, num_fwd_outputs: int,
              static_lifetime_input_indices: list[int] | None = None, **kwargs: Any):
    """A drop-in ``partition_fn``: torch's min-cut rematerialisation partition, through the cache."""
    with metrics.timed_phase("partition"):
        return _partition(joint, joint_inputs, num_fwd_outputs, static_lifetime_input_indices, kwargs)


def _partition(joint: fx.GraphModule, joint_inputs: Any, num_fwd_outputs: int,
               static_lifetime_input_indices: list[int] | None, kwargs: dict):
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    k = _key(joint, num_fwd_outputs, static_lifetime_input_indices, kwargs)
    if k is not None:
        hit = _load(k, joint)
        if hit is not None:
            metrics.add("partition_cache_hits")
            return hit
    fw, bw = min_cut_rematerialization_partition(joint, joint_inputs, num_fwd_outputs=num_fwd_outputs,
                                                 static_lifetime_input_indices=static_lifetime_input_indices,
                                                 **kwargs)
    if k is not None:
        _store(k, fw, bw)
    return fw, bw


def _key(joint: fx.GraphModule, num_fwd_outputs: int, static: list[int] | None, kwargs: dict) -> str | None:
    from ..compiler.keys import package_versions, source_fingerprint

    h = hashlib.sha256()
    metas = []
    for n in joint.graph.nodes:
        val = n.meta.get("val")
        for v in val if isinstance(val, (list, tuple)) else [val]:
            if isinstance(v, torch.SymInt) or (isinstance(v, torch.Tensor) and _symbolic(v)):
                return None
        if n.op == "placeholder":
            metas.append(_describe(val))
    parts = (_FORMAT, package_versions(), source_fingerprint("dynamo"), joint.code, repr(metas), str(num_fwd_outputs),
             repr(static), repr(sorted(kwargs.items())), repr(torch._functorch.config.save_config()))
    for part in parts:
        h.update(part.encode())
        h.update(b"\x00")
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():  # the partitioner runs in AOTAutograd's fake mode; constants are real
        graph_cache.hash_constants(h, joint)
    return "pt" + h.hexdigest()[2:]


def _symbolic(t: torch.Tensor) -> bool:
    return any(isinstance(s, torch.SymInt) for s in (*t.shape, *t.stride(), t.storage_offset()))


def _describe(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return (tuple(v.shape), tuple(v.stride()), str(v.dtype), v.device.type, v.requires_grad)
    return repr(v)


def _load(k: str, joint: fx.GraphModule) -> tuple[fx.GraphModule, fx.GraphModule] | None:
    from torch._guards import detect_fake_mode
    from torch.fx._graph_pickler import GraphPickler

    from ..compiler import driver

    blob = driver.default_cache().disk.get(k)
    if blob is None:
        return None
    fake_mode = detect_fake_mode([n.meta.get("val") for n in joint.graph.nodes if n.op == "placeholder"])
    if fake_mode is None:
        return None
    try:
        fw, bw = GraphPickler.loads(blob, fake_mode)
    except Exception:  # noqa: BLE001 - a stale or foreign record: partition afresh and overwrite it
        return None
    return fw, bw


def _store(k: str, fw: fx.GraphModule, bw: fx.GraphModule) -> None:
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.fx._graph_pickler import GraphPickler, Options

    from ..compiler import driver

    try:
        with unset_fake_temporarily():  # constants the graphs hold (a rotary table) are real tensors
            blob = GraphPickler.dumps((fw, bw), Options(ops_filter=None))
    except Exception:  # noqa: BLE001 - a graph GraphPickler cannot write (an opaque object): not cached
        return
    driver.default_cache().disk.put(k, blob)

