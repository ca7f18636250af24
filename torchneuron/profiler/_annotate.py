"""Estimated Trainium time for the eager ops a profiling session recorded (called by the C++ session when
it is processed; see csrc/python/ProfilerBindings.cpp).

A host kernel's record names the op and the neuron tensors it read or wrote (each once, in argument order)
and the device bytes it allocated and kept: its fresh outputs. That is what the op-level cost model of
``torchneuron.estimator`` needs; the same model estimates traced graphs.
"""

from __future__ import annotations

import functools
import json

import torch

from ..estimator.cost import op_cost
from ..estimator.machine import machine
from ..estimator.op_work import TensorMeta

Record = tuple[str, list[tuple[tuple[int, ...], torch.dtype, bool]], int]


def _split(name: str, tensors, out_bytes: int) -> tuple[list[TensorMeta], list[TensorMeta]]:
    """Inputs and outputs of one recorded call. An out= overload only writes its written tensors; an
    in-place op reads and writes them; fresh outputs are known by their bytes only (one flat tensor of the
    inputs' dtype stands for them)."""
    out_overload = name.endswith(".out") or "_out" in name.rsplit(".", 1)[-1]
    inputs = [TensorMeta(tuple(s), d) for s, d, written in tensors if not (written and out_overload)]
    outputs = [TensorMeta(tuple(s), d) for s, d, written in tensors if written]
    if out_bytes > 0:
        dtype = next((d for _, d, _ in tensors if d.is_floating_point), tensors[0][1] if tensors else torch.float32)
        outputs.append(TensorMeta((out_bytes // dtype.itemsize,), dtype))
    return inputs, outputs


@functools.lru_cache(maxsize=4096)
def _estimate(name: str, key: tuple, out_bytes: int, target: str) -> tuple[float, dict[str, str]]:
    tensors = [(s, d, w) for s, d, w in key]
    inputs, outputs = _split(name, tensors, out_bytes)
    est = op_cost(name, inputs, outputs, machine(target))
    meta = {"target": json.dumps(target), "bound": json.dumps(est.bound), "est_flops": str(est.flops),
            "est_bytes": str(est.bytes)}
    return est.time_ns, meta


_COPY_PREFIX = "Memcpy "


def annotate(batch: list[Record]) -> list[tuple[float | None, dict[str, str]]]:
    """(estimated ns, trace metadata as JSON values) for each recorded op or copy, on the configured target.
    A copy within device memory is a DMA; one over the host link is not estimated (its bandwidth is not in
    the target's numbers)."""
    target = machine().target
    out: list[tuple[float | None, dict[str, str]]] = []
    for name, tensors, out_bytes in batch:
        if name.startswith(_COPY_PREFIX):
            if "DtoD" not in name:
                out.append((None, {"target": json.dumps(target)}))
                continue
            name = "aten::copy_.out"
        key = tuple((tuple(s), d, bool(w)) for s, d, w in tensors)
        ns, meta = _estimate(name, key, int(out_bytes), target)
        out.append((ns, dict(meta)))
    return out


__all__ = ["annotate"]
