"""Device activity of the last profiling session, measured and estimated, as rows and as a table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class DeviceActivity:
    kind: str                 # op | graph | kernel | copy
    name: str
    device: int
    stream: int
    start_ns: int
    end_ns: int
    correlation: int          # the CPU op / record_function range that launched it (0: none)
    estimated_ns: float | None
    metadata: dict[str, Any] = field(default_factory=dict)
    op: str = ""              # the full op name with its overload (ops only)

    @property
    def sim_ns(self) -> int:
        return self.end_ns - self.start_ns


def device_activities() -> list[DeviceActivity]:
    """Every neuron device event of the last finished ``torch.profiler`` session (with
    ``ProfilerActivity.PrivateUse1``), in recording order."""
    from .. import _C

    out = []
    for r in _C._last_device_activities():
        meta = {k: json.loads(v) for k, v in r["metadata"].items()}
        out.append(DeviceActivity(r["kind"], r["name"], r["device"], r["stream"], r["start_ns"], r["end_ns"],
                                  r["correlation"], r["estimated_ns"], meta, r["op"]))
    return out


def summarize(activities: list[DeviceActivity]) -> list[dict[str, Any]]:
    """One row per event name: calls, measured (simulator) and estimated (Trainium) totals, slowest
    estimated first."""
    rows: dict[str, dict[str, Any]] = {}
    for a in activities:
        r = rows.setdefault(a.name, {"name": a.name, "kind": a.kind, "calls": 0, "sim_us": 0.0, "est_trn_us": 0.0,
                                     "estimated_calls": 0, "bound": a.metadata.get("bound", "")})
        r["calls"] += 1
        r["sim_us"] += a.sim_ns / 1e3
        if a.estimated_ns is not None:
            r["est_trn_us"] += a.estimated_ns / 1e3
            r["estimated_calls"] += 1
    return sorted(rows.values(), key=lambda r: (-r["est_trn_us"], -r["sim_us"]))


def device_table(activities: list[DeviceActivity] | None = None, row_limit: int = 20) -> str:
    """The estimated-time view of a session: per op / graph / kernel, the simulator's measured time next
    to the cost model's estimated Trainium time (``key_averages()`` shows the measured device time only)."""
    acts = device_activities() if activities is None else activities
    rows = summarize(acts)
    head = f"{'name':<50} {'kind':>6} {'calls':>6} {'sim us':>11} {'est trn us':>11}  bound"
    lines = [head, "-" * len(head)]
    for r in rows[:row_limit]:
        est = f"{r['est_trn_us']:.2f}" if r["estimated_calls"] else "-"
        lines.append(f"{r['name'][:50]:<50} {r['kind']:>6} {r['calls']:>6} {r['sim_us']:>11.2f} {est:>11}  "
                     f"{r['bound']}")
    lines.append("-" * len(head))
    sim = sum(a.sim_ns for a in acts) / 1e3
    est = sum(a.estimated_ns for a in acts if a.estimated_ns is not None) / 1e3
    lines.append(f"{len(acts)} device events: {sim:.2f} us on the simulator, {est:.2f} us estimated on Trainium")
    return "\n".join(lines)
