"""The op-level roofline: an op's time is its slowest resource (an engine or HBM), never less than its
FLOPs at peak or its bytes at full HBM bandwidth.

Eager execution runs each op as its own kernel: it reads its inputs from HBM, writes its outputs back and
pays the fixed DMA latency in and out. A compiled graph is fused: intermediates that fit in SBUF never touch
HBM, the engines overlap across the whole graph, and the fixed latency is paid once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .machine import DMA_LATENCY_NS, MIN_II_CYCLES, Machine
from .op_work import HBM, TENSOR, TensorMeta, Work, op_label, work


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

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3


def op_cost(name: str, inputs: list[TensorMeta], outputs: list[TensorMeta], m: Machine,
            flops: int | None = None) -> OpEstimate:
    """One op run as an eager kernel on device ``m``."""
    label = op_label(name)
    w: Work = work(name, inputs, outputs, m, flops)
    if not w.moves_data:
        return OpEstimate(label, 0, 0, 0.0, "-", 0.0, {}, inputs, outputs)
    nbytes = sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outputs)
    hbm_ns = nbytes / m.hbm_bytes_per_ns
    peak_ns = _flops_at_peak(w.flops, inputs, outputs, m)
    resources = dict(w.engines)
    resources[HBM] = max(resources.get(HBM, 0.0), hbm_ns)
    # An instruction costs at least the engine's minimum initiation interval.
    floor_ns = MIN_II_CYCLES / m.tensor_ghz
    bound = max(resources, key=lambda k: resources[k])
    busy = max(resources[bound], floor_ns)
    time_ns = busy + 2 * DMA_LATENCY_NS
    return OpEstimate(label, w.flops, nbytes, time_ns, bound, max(peak_ns, hbm_ns), resources, inputs, outputs)


def _flops_at_peak(flops: int, inputs: list[TensorMeta], outputs: list[TensorMeta], m: Machine) -> float:
    if flops <= 0:
        return 0.0
    dtype = next((t.dtype for t in (*inputs, *outputs) if t.dtype.is_floating_point), None)
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
    bound = max(engines, key=lambda k: engines[k]) if engines else "-"
    return Totals(total, bound, sum(op.bytes for op in ops), engines)


def fused_totals(ops: list[OpEstimate], hbm_bytes: int, m: Machine) -> Totals:
    """The graph as one compiled program: the engines' work overlaps, only ``hbm_bytes`` cross HBM."""
    engines: dict[str, float] = {}
    for op in ops:
        for k, v in op.engines.items():
            if k != HBM:
                engines[k] = engines.get(k, 0.0) + v
    engines[HBM] = hbm_bytes / m.hbm_bytes_per_ns
    bound = max(engines, key=lambda k: engines[k])
    has_work = any(op.bound != "-" for op in ops)
    total = engines[bound] + (2 * DMA_LATENCY_NS if has_work else 0.0)
    return Totals(total, bound, hbm_bytes, engines)


def roofline_ns(ops: list[OpEstimate], compulsory_bytes: int, m: Machine) -> float:
    """No program computing these ops can be faster: all matmul FLOPs at peak, or the bytes it must read
    and write (its inputs and outputs) at full HBM bandwidth."""
    tensor = sum(_flops_at_peak(op.flops, op.inputs, op.outputs, m) for op in ops)
    return max(tensor, compulsory_bytes / m.hbm_bytes_per_ns)


__all__ = ["TENSOR", "OpEstimate", "Totals", "eager_totals", "fused_totals", "op_cost", "roofline_ns"]
