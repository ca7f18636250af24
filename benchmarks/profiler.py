"""What profiling costs, measured in one run (JSON).

- small ops (16x16 add, mul, matmul; a 64-element sum): per-call latency with no profiler, under a CPU-only
  torch.profiler, and under one recording neuron activity (CPU + PrivateUse1), timed in alternation;
  ratios to the unprofiled latency (lower is better). No profiler is the path every program takes: it pays
  one relaxed atomic load per op for the neuron recorder (compare eager_overhead.py across builds).
- session processing: the time to stop a neuron profiling session of N small ops (estimating each op's
  Trainium time in Python), per op.
- estimate: torchneuron.estimate of an MLP (trace with fake tensors + cost), seconds per call.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import torchneuron  # noqa: E402
from _common import emit, parser  # noqa: E402

TARGETS = {"neuron_profiled_small_op_ratio_max": 3.0}


def _ops(device: str) -> dict:
    a, b = torch.randn(16, 16, device=device), torch.randn(16, 16, device=device)
    v = torch.randn(64, device=device)
    return {"add": lambda: torch.add(a, b), "mul": lambda: torch.mul(a, b), "sum": lambda: v.sum(),
            "matmul_16x16": lambda: a @ b}


def _time(fn, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    torch.neuron.synchronize()
    return (time.perf_counter() - start) / inner


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def small_ops(inner: int = 500, repeats: int = 7) -> dict:
    """Per-op seconds in three modes, alternated per repeat; ratios are medians of per-repeat ratios."""
    modes = {
        "none": _Null,
        "cpu_profiler": lambda: profile(activities=[ProfilerActivity.CPU]),
        "neuron_profiler": lambda: profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]),
    }
    out = {}
    for name, fn in _ops("neuron").items():
        for _ in range(50):
            fn()
        samples: dict[str, list[float]] = {m: [] for m in modes}
        for r in range(repeats):
            order = list(modes)[r % 3:] + list(modes)[: r % 3]
            for mode in order:
                with modes[mode]():
                    samples[mode].append(_time(fn, inner))
        out[name] = {
            "none_us": statistics.median(samples["none"]) * 1e6,
            "cpu_profiler_ratio": statistics.median(c / n for c, n in zip(samples["cpu_profiler"], samples["none"])),
            "neuron_profiler_ratio": statistics.median(p / n for p, n in zip(samples["neuron_profiler"],
                                                                              samples["none"])),
        }
    return out


def session_processing(ops: int = 2000) -> dict:
    a = torch.randn(16, 16, device="neuron")
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
    prof.__enter__()
    for _ in range(ops):
        a.mul(2)
    start = time.perf_counter()
    prof.__exit__(None, None, None)
    stop_s = time.perf_counter() - start
    events = len(torchneuron.profiler.device_activities())
    return {"ops": ops, "device_events": events, "stop_us_per_op": stop_s / ops * 1e6}


def estimate_seconds(repeats: int = 3) -> float:
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
        x = torch.randn(512, 1024)
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        torchneuron.estimate(model, x)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    args = parser(__doc__).parse_args()
    import torchneuron.profiler  # noqa: F401

    small = small_ops()
    result = {
        "small_ops": small,
        "neuron_profiled_small_op_ratio_median": statistics.median(v["neuron_profiler_ratio"] for v in small.values()),
        "session_processing": session_processing(),
        "estimate_mlp_seconds": estimate_seconds(),
        "targets": TARGETS,
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
