"""The answer of ``torchneuron.estimate``: per-op rows and totals for eager and compiled execution."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cost import OpEstimate, Totals


def human(n: float, unit: str = "") -> str:
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f} {suffix}{unit}"
    return f"{n:.0f} {unit}".rstrip()


def usd(x: float) -> str:
    """Dollars with three significant digits, never in exponent form ($0.0000934, $1.34, $2,150.00)."""
    if x == 0 or abs(x) >= 100:
        return f"${x:,.2f}"
    digits = max(2, 2 - math.floor(math.log10(abs(x))))
    return f"${x:.{digits}f}"


@dataclass
class Estimate:
    """Estimated Trainium device time of one call (``total_us`` for ``mode``; both modes are kept).

    ``ops`` has one row per ATen op the call runs, with its time as an eager kernel. ``roofline_us`` is the
    lower bound no program can beat (matmul FLOPs at peak, or the call's compulsory bytes at full HBM
    bandwidth); ``fraction_of_peak`` is the share of ``total_us`` the Tensor engine would need at peak.
    """

    target: str
    mode: str                 # "eager" | "compiled"
    ops: list[OpEstimate]
    eager: Totals
    compiled: Totals
    roofline_ns: float
    flops: int
    peak_tensor_ns: float     # the FLOPs at the Tensor engine's peak
    auto_cast: str = "none"   # the compiler auto-cast the estimate assumed (neuronx-cc --auto-cast[-type])
    weights: str = "inputs"   # "inputs" (read every call) | "constants" (compiled into the program)
    batch: int = 1            # samples per call (the first input's leading dimension)

    @property
    def totals(self) -> Totals:
        return self.compiled if self.mode == "compiled" else self.eager

    @property
    def total_us(self) -> float:
        return self.totals.total_us

    @property
    def eager_us(self) -> float:
        return self.eager.total_us

    @property
    def compiled_us(self) -> float:
        return self.compiled.total_us

    @property
    def roofline_us(self) -> float:
        return self.roofline_ns / 1e3

    @property
    def bytes(self) -> int:
        return self.totals.hbm_bytes

    @property
    def bound(self) -> str:
        return self.totals.bound

    @property
    def fraction_of_peak(self) -> float:
        return self.peak_tensor_ns / self.totals.total_ns if self.totals.total_ns > 0 else 0.0

    def by_op(self) -> list[dict]:
        """Rows grouped by op name, slowest first."""
        groups: dict[str, dict] = {}
        for op in self.ops:
            if op.bound == "-":
                continue
            g = groups.setdefault(op.name, {"name": op.name, "calls": 0, "flops": 0, "bytes": 0, "time_ns": 0.0,
                                            "bounds": {}})
            g["calls"] += 1
            g["flops"] += op.flops
            g["bytes"] += op.bytes
            g["time_ns"] += op.time_ns
            g["bounds"][op.bound] = g["bounds"].get(op.bound, 0.0) + op.time_ns
        rows = sorted(groups.values(), key=lambda g: -g["time_ns"])
        for g in rows:
            g["bound"] = max(g.pop("bounds").items(), key=lambda kv: kv[1])[0]
        return rows

    def table(self, limit: int = 25) -> str:
        rows = self.by_op()
        total = sum(r["time_ns"] for r in rows) or 1.0
        head = f"{'op':<52} {'calls':>6} {'FLOPs':>11} {'bytes':>11} {'eager us':>10} {'share':>6}  bound"
        lines = [f"torchneuron.estimate — target {self.target}, one neuron device", self.assumptions(), head,
                 "-" * len(head)]
        for r in rows[:limit]:
            lines.append(f"{r['name'][:52]:<52} {r['calls']:>6} {human(r['flops']):>11} {human(r['bytes'], 'B'):>11} "
                         f"{r['time_ns'] / 1e3:>10.2f} {100 * r['time_ns'] / total:>5.1f}%  {r['bound']}")
        if len(rows) > limit:
            rest = rows[limit:]
            lines.append(f"{'... ' + str(len(rest)) + ' more ops':<52} {sum(r['calls'] for r in rest):>6} "
                         f"{'':>11} {'':>11} {sum(r['time_ns'] for r in rest) / 1e3:>10.2f}")
        lines.append("-" * len(head))
        lines.append(f"eager    : {self.eager_us:10.2f} us  ({self.eager.bound}-bound, "
                     f"{human(self.eager.hbm_bytes, 'B')} HBM traffic)")
        lines.append(f"compiled : {self.compiled_us:10.2f} us  ({self.compiled.bound}-bound, "
                     f"{human(self.compiled.hbm_bytes, 'B')} HBM traffic, fused)")
        lines.append(f"roofline : {self.roofline_us:10.2f} us  ({human(self.flops)}FLOP matmul work; "
                     f"{self.mode} runs at {100 * self.fraction_of_peak:.1f}% of the Tensor engine's peak)")
        return "\n".join(lines)

    def inferences_per_s(self, devices: int = 1) -> float:
        """Throughput of ``devices`` neuron devices each running this call back to back (data parallel, as
        AWS's inference benchmarks run one model per NeuronCore)."""
        return devices * self.batch / (self.total_us / 1e6) if self.total_us > 0 else float("inf")

    def cost(self, instance_type: object = None, hourly_usd: float | None = None) -> dict:
        """Dollars per thousand inferences on an instance (default: the target's smallest) with every device
        serving, at its default hourly rate or ``hourly_usd``; ``low``/``high`` carry the calibration band."""
        from .band import BAND
        from .instances import default_for, instance
        from .machine import machine

        inst = instance(instance_type, hourly_usd) if instance_type is not None else default_for(self.target)
        if hourly_usd is not None:
            inst = inst.with_rate(hourly_usd)
        if inst.hourly_usd is None:
            raise ValueError(f"{inst.name} has no public hourly rate: pass hourly_usd=")
        devices = inst.chips * machine(self.target).devices_per_chip
        per_k = inst.hourly_usd / 3600 / self.inferences_per_s(devices) * 1e3
        return {"instance": inst.name, "hourly_usd": inst.hourly_usd, "devices": devices,
                "inferences_per_s": self.inferences_per_s(devices), "usd_per_thousand": per_k,
                "low": per_k * (1 - BAND), "high": per_k * (1 + BAND)}

    def assumptions(self) -> str:
        """The settings this estimate assumed, in one line."""
        hint = "" if self.auto_cast != "none" else \
            " (torch.compile's default; AWS's published benchmarks use matmult-bf16: pass auto_cast=)"
        return f"assumed  : auto-cast {self.auto_cast}{hint}; weights {self.weights}"

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (f"Estimate(target={self.target!r}, mode={self.mode!r}, auto_cast={self.auto_cast!r}, "
                f"total_us={self.total_us:.2f}, "
                f"roofline_us={self.roofline_us:.2f}, ops={len(self.ops)})")
