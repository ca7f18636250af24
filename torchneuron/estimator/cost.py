"""The op-level roofline: an op's time is its slowest resource (an engine or HBM), never less than its
FLOPs at peak or its bytes at full HBM bandwidth.

Eager execution runs each op as its own kernel: it reads its inputs from HBM, writes its outputs back and
pays the fixed DMA latency in and out. A compiled graph is one program, launched once: intermediates that fit
in SBUF never touch HBM, and its ops run in dependency order. Within an op the engines and the DMA queues
pipeline over tiles (the op takes its slowest resource); a run of elementwise and reduction ops streams tile
by tile through the Vector and Scalar engines together (the run takes its slowest engine); a matmul or a
data-movement op waits for its whole input, so it starts a stage of its own. HBM traffic of a program — its
inputs read where first used, its outputs written, intermediates too large for SBUF spilled and read back —
moves through the device's DMA queues at ``Machine.stream_bytes_per_ns``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .machine import DMA_LATENCY_NS, MIN_II_CYCLES, Machine
from ..lowering.auto_cast import NONE, AutoCast
from .op_work import DMA, HBM, TENSOR, TensorMeta, Work, op_label, work


@dataclass
class OpEstimate:
    name: str                   # aten::mm
    flops: int                  # Tensor-engine FLOPs (what torch.utils.flop_counter counts)
    bytes: int                  # HBM bytes an eager kernel moves (inputs read + outputs written)
    time_ns: float              # estimated device time as an eager kernel
    bound: str                  # Tensor | Vector | Scalar | DMA | HBM | - (no device work)
    roofline_ns: float          # max(FLOPs at peak, bytes at HBM bandwidth)
    engines: dict[str, float] = field(default_factory=dict)  # busy time per engine, ns
    inputs: list[TensorMeta] = field(default_factory=list)
    outputs: list[TensorMeta] = field(default_factory=list)
    cast: AutoCast = NONE

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3


def op_cost(name: str, inputs: list[TensorMeta], outputs: list[TensorMeta], m: Machine,
            flops: int | None = None, cast: AutoCast = NONE) -> OpEstimate:
    """One op run as an eager kernel on device ``m``."""
    label = op_label(name)
    w: Work = work(name, inputs, outputs, m, flops, cast)
    if not w.moves_data:
        return OpEstimate(label, 0, 0, 0.0, "-", 0.0, {}, inputs, outputs)
    nbytes = w.hbm_bytes if w.hbm_bytes is not None else \
        sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outputs)
    hbm_ns = nbytes / m.stream_bytes_per_ns
    peak_ns = _flops_at_peak(w.flops, inputs, outputs, m, cast)
    resources = dict(w.engines)
    resources[HBM] = max(resources.get(HBM, 0.0), hbm_ns)
    # An instruction costs at least the engine's minimum initiation interval.
    floor_ns = MIN_II_CYCLES / m.tensor_ghz
    bound = max(resources, key=lambda k: resources[k])
    busy = max(resources[bound], floor_ns)
    time_ns = busy + 2 * DMA_LATENCY_NS
    roof = max(peak_ns, nbytes / m.hbm_bytes_per_ns)
    return OpEstimate(label, w.flops, nbytes, time_ns, bound, roof, resources, inputs, outputs, cast)


def _flops_at_peak(flops: int, inputs: list[TensorMeta], outputs: list[TensorMeta], m: Machine,
                   cast: AutoCast = NONE) -> float:
    if flops <= 0:
        return 0.0
    dtype = next((t.dtype for t in (*inputs, *outputs) if t.dtype.is_floating_point), None)
    if dtype is not None and cast.casts(dtype, on_tensor_engine=True):
        dtype = torch.bfloat16
    rate = m.tensor_flops_per_ns(dtype) if dtype is not None else m.tensor_bf16_flops_per_ns
    return flops / rate


@dataclass
class Totals:
    total_ns: float
    bound: str
    hbm_bytes: int
    engines: dict[str, float]

    @property
    def total_us(self) -> float:
        return self.total_ns / 1e3


def eager_totals(ops: list[OpEstimate]) -> Totals:
    """Ops one after another, each its own kernel."""
    engines: dict[str, float] = {}
    for op in ops:
        for k, v in op.engines.items():
            engines[k] = engines.get(k, 0.0) + v
    total = sum(op.time_ns for op in ops)
    critical: dict[str, float] = {}  # time spent bound by each resource
    for op in ops:
        if op.bound != "-":
            critical[op.bound] = critical.get(op.bound, 0.0) + op.time_ns
    bound = max(critical, key=lambda k: critical[k]) if critical else "-"
    return Totals(total, bound, sum(op.bytes for op in ops), engines)


def fused_totals(ops: list[OpEstimate], op_bytes: list[int], extra_bytes: int, m: Machine) -> Totals:
    """The graph as one compiled program (see the module docstring): ``op_bytes[i]`` are the HBM bytes op
    ``i`` moves inside the program, ``extra_bytes`` those no op moves (an input returned as an output)."""
    engines: dict[str, float] = {}
    critical: dict[str, float] = {}
    stages: list[dict[str, float]] = []
    streaming = False
    for op, nbytes in zip(ops, op_bytes):
        if op.bound == "-" and not nbytes:
            continue
        for k, v in op.engines.items():
            if k != HBM:
                engines[k] = engines.get(k, 0.0) + v
        stream = not (op.engines.get(TENSOR, 0.0) > 0 or op.engines.get(DMA, 0.0) > 0)
        if not (stream and streaming):
            stages.append({})
        streaming = stream
        stage = stages[-1]
        for k, v in op.engines.items():
            if k != HBM:
                stage[k] = stage.get(k, 0.0) + v
        stage[HBM] = stage.get(HBM, 0.0) + nbytes / m.stream_bytes_per_ns
    hbm_bytes = sum(op_bytes) + extra_bytes
    engines[HBM] = hbm_bytes / m.stream_bytes_per_ns
    floor_ns = MIN_II_CYCLES / m.tensor_ghz
    total = 0.0
    for stage in stages:
        k = max(stage, key=lambda e: stage[e])
        t = max(stage[k], floor_ns)
        critical[k] = critical.get(k, 0.0) + t
        total += t
    total += extra_bytes / m.stream_bytes_per_ns
    if stages or extra_bytes:
        total += 2 * DMA_LATENCY_NS  # one launch: the first load and the last store
    bound = max(critical, key=lambda k: critical[k]) if critical else (HBM if extra_bytes else "-")
    return Totals(total, bound, hbm_bytes, engines)


def roofline_ns(ops: list[OpEstimate], compulsory_bytes: int, m: Machine) -> float:
    """No program computing these ops can be faster: all matmul FLOPs at peak, or the bytes it must read
    and write (its inputs and outputs) at full HBM bandwidth."""
    tensor = sum(_flops_at_peak(op.flops, op.inputs, op.outputs, m, op.cast) for op in ops)
    return max(tensor, compulsory_bytes / m.hbm_bytes_per_ns)


__all__ = ["TENSOR", "OpEstimate", "Totals", "eager_totals", "fused_totals", "op_cost", "roofline_ns"]
