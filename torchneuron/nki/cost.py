"""Cycle estimates per instruction and a dataflow schedule over the five engines (reference §3).

Each instruction costs what the documented cost model says ("Estimated instruction cost" in the ISA docs and
the architecture guides) at the target's engine clock. Engines run in parallel; an instruction starts when the
data it reads has been produced (read-after-write on whole allocations; the compiler's multi-buffering removes
write-after-read stalls as far as SBUF and PSUM hold the tiles in flight, which `core.room` enforces) and its
engine has room for it: the compiler's scheduler puts an instruction whose data is ready into idle time its
engine left while an earlier one waited, so engines do not run in program order. DMA is 16 queues at the
per-engine bandwidth, each transfer with a fixed completion latency. The estimate is a model, not a
measurement: `neuron-profile` on a Trn host is the ground truth.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .hardware import Target

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
MIN_II = 64                 # minimum initiation interval, engine cycles
SBUF_ACCESS_CYCLES = 60     # start latency of an SBUF/PSUM access
GPSIMD_START_CYCLES = 150
MM_INIT_LATENCY = 64
_STATIC_ENGINES = ("vector", "scalar")
# AWS's Trainium architecture guide: Vector instructions pay "a static instruction overhead of 100 engine cycles"
# on top of their cost when running "many back-to-back instructions either with N << 128 or with every instruction
# depending on the output tile of the previous instruction", and its Vector notes apply to the Scalar engine: an
# instruction's overhead overlaps the one before it unless it waits for that one's output to be committed. Here:
# a run of instructions with every operand under TINY_ELEMENTS per partition, from the second on (one tiny
# instruction among large ones hides it); and an instruction reading a result of the instruction before it on
# its engine's timeline, directly or through other instructions (`nl.rsqrt` of a Vector result feeding the next
# Vector instruction); independent work between the two hides it.
STATIC_CYCLES = 100
TINY_ELEMENTS = 64
DMA_LATENCY_NS = 1300.0     # DMA cross-engine latency
# Every descriptor (one contiguous run, at most one partition's row) costs its queue this much on top of
# moving its bytes: descriptor setup and the per-packet handshake. AWS's DMA guide describes the effect
# (< 256 B per partition severely overhead-bound, 2 KiB approaching peak, >= 4 KiB saturating); 70 ns is
# what the memory-bound versions of AWS's matmul tutorial on trn1 imply (docs/nki.md, "Calibration"). At
# 17 B/ns that is the time of 1190 bytes: 256 B runs reach 18 % of a queue's bandwidth, 2 KiB 63 %, 4 KiB
# 77 %, 16 KiB 93 %.
DMA_DESCRIPTOR_NS = 70.0
# HBM is read and written in bursts: a 64-bit (HBM2e) or 32-bit (HBM3/3e) pseudo-channel with burst length 4 or
# 8 moves 32 bytes per access (JEDEC JESD235/JESD238), so a run shorter than that still costs a whole burst of
# queue time. Runs this short are not descriptors of their own: the DMA engine walks an element-strided HBM
# access pattern inside the descriptor of the on-chip side's partition row (the transfer's "packets, one per
# engine per group of SBUF partitions", AWS's Neuron Explorer DMA guide). `instructions.dma.record_dma`.
HBM_BURST_BYTES = 32
# A transfer may fill one of this many most recent idle gaps of a queue (`CostModel.dma`); older gaps count as
# busy. It bounds the look-back (and the search: a kernel leaves a gap per waiting store); the published
# tutorials' estimates are the same for 8 and for 64.
DMA_REORDER_GAPS = 16
# The compiler's list scheduler orders each engine's instruction stream: an instruction whose operands are ready
# runs in an idle gap its engine left while an earlier one waited for data, as far back as this many gaps
# (`CostModel.compute`; the engine executes the order the compiler chose, which is not program order). AWS's
# SD-attention sample estimates within 1.5 % of each other for 16 and 64 gaps (8: 0.3 % more).
COMPUTE_REORDER_GAPS = 16


@dataclass
class CostReport:
    """What a kernel launch would cost on the target, by the documented cost model."""

    target: str
    latency_ns: float
    engine_busy_ns: dict[str, float]
    instructions: dict[str, int]
    bound: str                  # the busiest engine
    bound_kind: str             # "compute" or "dma"
    flops: float
    dma_bytes: float
    peak_sbuf_bytes_per_partition: int = 0
    peak_psum_bytes_per_partition: int = 0
    psum_spill_bytes_per_partition: int = 0  # PSUM tiles the compiler would spill to SBUF (memory.finish)
    sbuf_spill_bytes_per_partition: int = 0  # SBUF bytes spilled to HBM and reloaded, summed over round trips
    per_core_latency_ns: list[float] = field(default_factory=list)

    @property
    def latency_us(self) -> float:
        return self.latency_ns / 1000.0

    def utilisation(self) -> dict[str, float]:
        return {e: (b / self.latency_ns if self.latency_ns else 0.0) for e, b in self.engine_busy_ns.items()}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["latency_us"] = self.latency_us
        return d

    def __str__(self) -> str:
        busy = ", ".join(f"{e} {b / 1000:.2f} us" for e, b in self.engine_busy_ns.items() if b)
        return (f"estimated {self.latency_us:.2f} us on {self.target} ({self.bound_kind}-bound on {self.bound}; "
                f"busy: {busy})")

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def copy(self) -> CostReport:
        """A shallow copy (copy.copy's generic path cost 1 % of a training step, once per launch)."""
        out = CostReport.__new__(CostReport)
        out.__dict__.update(self.__dict__)
        return out


class CostModel:
    """Schedules the instructions of the kernel instances that run on one physical NeuronCore."""

    def __init__(self, target: Target) -> None:
        self.target = target
        # each engine's busy intervals, and NeuronCore-v2's shared ports: Vector and GpSimd cannot access SBUF
        # at the same time, nor Vector and Scalar PSUM (lifted on v3+)
        self.timelines = {e: Timeline(COMPUTE_REORDER_GAPS) for e in (*ENGINES[:4], "sbuf_port", "psum_port")}
        # (engine, touches PSUM) -> the timelines an instruction occupies, made once (every instruction asks)
        self._lines = {(e, psum): self._occupied(e, psum) for e in ENGINES[:4] for psum in (False, True)}
        # storage key -> when its latest write started: writes into one tile start in program order (the first
        # claims the tile's room, `core.room`)
        self.write_from: dict[Any, float] = {}
        self.last_start = 0.0  # when the most recently scheduled instruction started (`core.room.replay`)
        self.dma_free = [0.0] * target.dma_engines  # when each queue's last transfer ends
        # each queue's busy intervals (back-to-back transfers merge): `dma` backfills gaps
        self.dma_queues = [Timeline(DMA_REORDER_GAPS) for _ in range(target.dma_engines)]
        # while every transfer has taken all queues, their timelines are equal: queue 0's stands for all (a
        # 128-partition transfer is 128 descriptors, so most kernels never split them)
        self.dma_uniform = True
        # storage uid, or (uid, block) of a block tensor (KernelRun._operands) -> time its last write completes
        self.ready: dict[Any, float] = {}
        self.tiny_last: dict[str, bool] = {}  # whether each engine's last instruction was tiny (STATIC_CYCLES)
        # Vector / Scalar -> (end, what depends on it) of the last instruction on its timeline (STATIC_CYCLES)
        self.tail: dict[str, tuple[float, set[Any]]] = {}
        self.busy = {e: 0.0 for e in ENGINES}
        self.counts: dict[str, int] = dict.fromkeys(ENGINES, 0)  # instructions per engine
        self.end = 0.0
        self.flops = 0.0
        self.dma_bytes = 0.0
        self._clocks = {"tensor": target.tensor_ghz, "vector": target.vector_ghz, "scalar": target.scalar_ghz,
                        "gpsimd": target.gpsimd_ghz}

    def _clock(self, engine: str) -> float:
        return self._clocks[engine]

    def _deps(self, reads: Any) -> float:
        return _latest(self.ready, reads)

    def _finish(self, writes: Any, done: float) -> None:
        _raise(self.ready, writes, done)
        if done > self.end:
            self.end = done

    def compute(self, engine: str, cycles: float, reads: Any = (), writes: Any = (), latency_cycles: float = 0.0,
                flops: float = 0.0, after: float = 0.0, psum: bool = False, tiny: bool = False,
                in_order: bool = False) -> float:
        """Schedules one instruction; returns when it ends (its operands' room is free from then on).
        `psum`: a Vector or Scalar instruction that reads or writes PSUM (they take turns on NeuronCore-v2);
        `tiny`: one with fewer than TINY_ELEMENTS elements per partition in every operand; `in_order`: one
        the scheduler may not move ahead of its engine's earlier instructions (`nl.no_reorder`)."""
        clock = self._clocks[engine]
        if tiny and self.tiny_last.get(engine):  # the second and later of a run of tiny instructions
            cycles += STATIC_CYCLES
        elif engine in _STATIC_ENGINES and self._follows_tail(engine, reads):
            cycles += STATIC_CYCLES
        self.tiny_last[engine] = tiny
        ns = cycles / clock
        start = max(self._deps(reads), after, self._write_order(writes))
        lines = self._lines[engine, psum]
        line = lines[0]
        if in_order and line.ends and line.ends[-1] > start:
            start = line.ends[-1]
        start = _fit_all(lines, start, ns)
        end = start + ns
        for other in lines:
            other.occupy(start, end)
        self._derive(reads, writes)
        if engine in _STATIC_ENGINES and end >= self.tail.get(engine, (0.0,))[0]:  # the last on its timeline now
            self.tail[engine] = (end, set(writes))
        self.busy[engine] += ns
        self.counts[engine] += 1
        self.flops += flops
        self.last_start = start
        self._writing(writes, start)
        self._finish(writes, end + latency_cycles / clock)
        return end

    def _follows_tail(self, engine: str, reads: Any) -> bool:
        tail = self.tail.get(engine)
        return tail is not None and any(uid in tail[1] for uid in reads)

    def _derive(self, reads: Any, writes: Any) -> None:
        """Results computed from what depends on a Vector / Scalar engine's last instruction depend on it too."""
        for _, derived in self.tail.values():
            if any(uid in derived for uid in reads):
                derived.update(writes)

    def _occupied(self, engine: str, psum: bool) -> tuple[Timeline, ...]:
        """The engine's timeline, and on NeuronCore-v2 the shared ports it holds: SBUF for Vector and GpSimd,
        PSUM for Vector and Scalar instructions that touch it."""
        lines = [self.timelines[engine]]
        if self.target.generation == 2:
            if engine in ("vector", "gpsimd"):
                lines.append(self.timelines["sbuf_port"])
            if psum and engine in ("vector", "scalar"):
                lines.append(self.timelines["psum_port"])
        return tuple(lines)

    def _write_order(self, writes: Any) -> float:
        """The earliest start for an instruction writing `writes`: after the tiles' earlier writes started."""
        return _latest(self.write_from, writes)

    def _writing(self, writes: Any, start: float) -> None:
        _raise(self.write_from, writes, start)

    def dma(self, nbytes: float, chunks: int, reads: Any = (), writes: Any = (), after: float = 0.0,
            moved: float | None = None) -> float:
        """A transfer's descriptors (one per contiguous run) spread over up to all queues at once; each
        queue moves its share of the bytes and pays `DMA_DESCRIPTOR_NS` per descriptor.

        Transfers are served in the order their data is ready, not in program order: a DMA is triggered by
        the engine that produced its source (a store after the compute it drains, a load of kernel inputs at
        once), so a store waiting for its data does not hold back a later, independent load. A transfer
        takes the earliest time at which enough queues are idle for its whole duration (it may fill a gap
        that an earlier, waiting transfer left). `moved`: the bytes the queues spend time on when that is
        more than `nbytes` (whole HBM bursts for element-strided runs)."""
        self._derive(reads, writes)
        chunks = max(chunks, 1)
        free = self.dma_free
        n = len(free)
        lanes = min(n, chunks)
        wire = nbytes if moved is None or moved < nbytes else moved
        ns = (chunks * DMA_DESCRIPTOR_NS + wire / self.target.dma_bytes_per_ns_per_engine) / lanes
        t = max(self._deps(reads), after, self._write_order(writes))
        if lanes == n and self.dma_uniform:
            start = self._fit(0, t, ns)
            end = start + ns
            self._occupy(0, start, end)
            if end > free[0]:
                free[:] = [end] * n
            self.last_start = start
            self._writing(writes, start)
            return self._dma_done(ns, lanes, nbytes, writes, end)
        if self.dma_uniform:  # the first transfer on fewer queues: each queue needs its own timeline now
            self.dma_uniform = False
            for q in range(1, n):
                self.dma_queues[q] = self.dma_queues[0].copy()
        if lanes == n and t >= max(free):  # after everything queued so far: no gap to look at
            start = t
            queues: Any = range(n)
        elif lanes == n:
            while True:  # the earliest start that every queue can take
                start = max(self._fit(q, t, ns) for q in range(n))
                if start == t:
                    break
                t = start
            queues = range(n)
        else:
            while True:
                fits = sorted((self._fit(q, t, ns), q) for q in range(n))[:lanes]
                start = fits[-1][0]
                if start == t or all(self._fit(q, start, ns) == start for _, q in fits):
                    break
                t = start
            queues = [q for _, q in fits]
        end = start + ns
        for q in queues:
            self._occupy(q, start, end)
            if end > free[q]:
                free[q] = end
        self.last_start = start
        self._writing(writes, start)
        return self._dma_done(ns, lanes, nbytes, writes, end)

    def _dma_done(self, ns: float, lanes: int, nbytes: float, writes: Any, end: float) -> float:
        n = len(self.dma_free)
        self.busy["dma"] += ns * lanes / n  # wall-equivalent of all queues together
        self.counts["dma"] += 1
        self.dma_bytes += nbytes
        self._finish(writes, end + DMA_LATENCY_NS)
        return end

    def _fit(self, q: int, t: float, ns: float) -> float:
        return self.dma_queues[q].fit(t, ns)

    def _occupy(self, q: int, start: float, end: float) -> None:
        self.dma_queues[q].occupy(start, end)

    def spill(self, bytes_per_partition: int, partitions: int) -> None:
        """An SBUF tile spilled to HBM and reloaded (the compiler's qSyncSpillReload traffic): both transfers
        sit on the critical path (the engine that needs the space waits for the store, the tile's next
        reader for the reload), so they start when the kernel's work so far has ended."""
        for _ in range(2):
            self.dma(bytes_per_partition * partitions, partitions, after=self.end)

    def sync(self, reads: Any = (), writes: Any = (), after: float = 0.0) -> float:
        """A zero-cost data move (e.g. assigning an instruction's result into a tile): carry readiness."""
        done = max(self._deps(reads), after)
        self._derive(reads, writes)
        self.last_start = done
        self._finish(writes, done)
        return done


def _raise(times: dict[Any, float], keys: Any, t: float) -> None:
    """Moves each key's recorded time up to `t` (never down)."""
    for k in keys:
        if times.get(k, 0.0) < t:
            times[k] = t


def _latest(times: dict[Any, float], keys: Any) -> float:
    """The latest of the times recorded for `keys` (0 for none)."""
    out = 0.0
    for k in keys:
        t = times.get(k, 0.0)
        if t > out:
            out = t
    return out


class Timeline:
    """One resource's busy intervals (sorted, disjoint); only the most recent `gaps` idle gaps may be filled."""

    __slots__ = ("starts", "ends", "gaps")

    def __init__(self, gaps: int) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.gaps = gaps

    def fit(self, t: float, ns: float) -> float:
        return _fit(self.starts, self.ends, t, ns)

    def occupy(self, start: float, end: float) -> None:
        starts, ends = self.starts, self.ends
        _occupy(starts, ends, start, end)
        if len(ends) > self.gaps + 1:  # the oldest gap is out of reach: all before it counts as busy
            del starts[1], ends[0]
            starts[0] = 0.0

    def copy(self) -> Timeline:
        other = Timeline(self.gaps)
        other.starts, other.ends = list(self.starts), list(self.ends)
        return other


def _fit_all(lines: tuple[Timeline, ...], t: float, ns: float) -> float:
    """The earliest start >= t at which every timeline is idle for ns."""
    if len(lines) == 1:
        return lines[0].fit(t, ns)
    while True:
        start = max(line.fit(t, ns) for line in lines)
        if start == t:
            return t
        t = start


def _fit(starts: list[float], ends: list[float], t: float, ns: float) -> float:
    """The earliest start >= t at which a timeline (sorted disjoint busy intervals) is idle for ns."""
    if not ends or t >= ends[-1]:
        return t
    i = bisect.bisect_right(ends, t)
    while i < len(ends):
        if t + ns <= starts[i]:
            return t
        if ends[i] > t:
            t = ends[i]
        i += 1
    return t


def _occupy(starts: list[float], ends: list[float], start: float, end: float) -> None:
    """Marks [start, end) busy on a timeline where it is idle (`_fit`), merging touching intervals."""
    if not ends or start >= ends[-1]:  # the common case: after everything so far
        if ends and start == ends[-1]:
            ends[-1] = end
        else:
            starts.append(start)
            ends.append(end)
        return
    i = bisect.bisect_right(ends, start)  # the gap [ends[i-1], starts[i]] holds [start, end]
    if i > 0 and ends[i - 1] == start:
        if end == starts[i]:  # fills the gap exactly
            ends[i - 1] = ends[i]
            del starts[i], ends[i]
        else:
            ends[i - 1] = end
    elif end == starts[i]:
        starts[i] = start
    else:
        starts.insert(i, start)
        ends.insert(i, end)


# --- documented per-instruction costs, in engine cycles ---

def matmul_cycles(m_stationary: int, n_moving: int, fp32: bool) -> float:
    cycles = max(min(64, m_stationary), n_moving)
    return float(cycles * (4 if fp32 else 1))


def pe_transpose_cycles(partitions: int, free: int) -> float:
    return float(max(partitions, min(64, free)))


def vector_cycles(target: Target, n: int, inputs: int = 1, fast_16bit: bool = False, kind: str = "") -> float:
    """Vector engine: `max(MIN_II, N)` for one input, `2N` for two; NC-v3+ lanes process 2 (4 for
    16-bit) elements per cycle for copy / tensor_scalar / tensor_tensor."""
    per_lane = 1.0
    if target.generation >= 3 and kind in ("copy", "tensor_scalar", "tensor_tensor"):
        rate = target.vector_elems_per_cycle_16bit if fast_16bit else target.vector_elems_per_cycle
        per_lane = rate / 128
    return max(MIN_II, math.ceil(inputs * n / per_lane))


def scalar_cycles(n: int, reduce: bool = False) -> float:
    return float(max(MIN_II, n) + (MIN_II if reduce else 0))


def gpsimd_cycles(n: int) -> float:
    return float(GPSIMD_START_CYCLES + n)


def report(models: list[CostModel], target: Target, peak_sbuf: int = 0, peak_psum: int = 0,
           psum_spill: int = 0, sbuf_spill: int = 0) -> CostReport:
    if len(models) == 1:  # one core (every launch but LNC=2 ones): the model's own numbers
        m = models[0]
        busy = dict(m.busy)
        counts: dict[str, int] = m.counts
        latency = m.end
    else:
        busy = {e: max((m.busy[e] for m in models), default=0.0) for e in ENGINES}
        counts = Counter()
        for m in models:
            counts.update(m.counts)
        latency = max((m.end for m in models), default=0.0)
    bound = max(ENGINES, key=lambda e: busy[e])
    return CostReport(
        target=target.name, latency_ns=latency, engine_busy_ns=busy,
        instructions={e: counts.get(e, 0) for e in ENGINES}, bound=bound,
        bound_kind="dma" if bound == "dma" else "compute",
        flops=sum(m.flops for m in models), dma_bytes=sum(m.dma_bytes for m in models),
        peak_sbuf_bytes_per_partition=peak_sbuf, peak_psum_bytes_per_partition=peak_psum,
        psum_spill_bytes_per_partition=psum_spill, sbuf_spill_bytes_per_partition=sbuf_spill,
        per_core_latency_ns=[m.end for m in models],
    )


def roofline_ns(flops: float, hbm_bytes: float, target: Target, fp32: bool = False) -> float:
    """Lower bound for one NeuronCore: peak Tensor-engine FLOPs or per-core DMA bandwidth, whichever binds."""
    peak = (target.tensor_fp32_tflops if fp32 else target.tensor_bf16_tflops) * 1e3  # FLOP per ns
    return max(flops / peak, hbm_bytes / target.dma_bytes_per_ns)
