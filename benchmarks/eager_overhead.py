"""Eager overhead of the neuron device vs CPU, measured in one run (JSON).

- small ops: per-call latency neuron/cpu for add, mul, sum and a 16x16 matmul (lower is better; target <= 2.0)
- large ops: throughput neuron/cpu for a 1M-element add and a 1024^2 matmul (higher is better; target >= 0.9)
- cached allocator: one allocate+free pair that hits the cache, in the C++ allocator (target <= 1 us),
  and torch.empty + release through the whole dispatcher for reference
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import torchneuron  # noqa: E402,F401
from _common import emit, parser, per_call_seconds, sync_for  # noqa: E402

TARGETS = {"autoload_added_import_s_max": 0.3, "small_op_ratio_max": 2.0, "large_op_throughput_ratio_min": 0.9, "cached_alloc_free_ns_max": 1000}


def small_ops(device: str) -> dict[str, float]:
    a, b = torch.randn(16, 16, device=device), torch.randn(16, 16, device=device)
    v = torch.randn(64, device=device)
    ops = {
        "add": lambda: torch.add(a, b),
        "mul": lambda: torch.mul(a, b),
        "sum": lambda: v.sum(),
        "matmul_16x16": lambda: a @ b,
    }
    return {name: per_call_seconds(fn, sync_for(device), inner=2000) for name, fn in ops.items()}


def large_ops(device: str) -> dict[str, float]:
    x, y = torch.randn(1 << 20, device=device), torch.randn(1 << 20, device=device)
    m, n = torch.randn(1024, 1024, device=device), torch.randn(1024, 1024, device=device)
    ops = {"add_1M": (lambda: torch.add(x, y), 200), "matmul_1024": (lambda: m @ n, 10)}
    return {name: per_call_seconds(fn, sync_for(device), inner=inner, repeats=5) for name, (fn, inner) in ops.items()}


def import_torch_seconds(autoload: bool, repeats: int = 5) -> float:
    """Median wall time of `import torch` in a fresh interpreter, with or without the neuron autoload."""
    import statistics
    import subprocess

    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "1" if autoload else "0"}
    code = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
    runs = [float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 check=True).stdout) for _ in range(repeats)]
    return statistics.median(runs)


def main() -> None:
    args = parser(__doc__).parse_args()
    torch.set_num_threads(torch.get_num_threads())
    small = {"cpu": small_ops("cpu"), "neuron": small_ops("neuron")}
    large = {"cpu": large_ops("cpu"), "neuron": large_ops("neuron")}
    alloc_ns = torchneuron._C._bench_allocator(4096, 200000)
    empty_s = per_call_seconds(lambda: torch.empty(1024, device="neuron"), lambda: None, inner=20000)
    cpu_empty_s = per_call_seconds(lambda: torch.empty(1024), lambda: None, inner=20000)
    result = {
        "small_op_latency_us": {d: {k: v * 1e6 for k, v in ops.items()} for d, ops in small.items()},
        "small_op_ratio_neuron_over_cpu": {k: small["neuron"][k] / small["cpu"][k] for k in small["cpu"]},
        "large_op_time_ms": {d: {k: v * 1e3 for k, v in ops.items()} for d, ops in large.items()},
        "large_op_throughput_ratio_neuron_over_cpu": {k: large["cpu"][k] / large["neuron"][k] for k in large["cpu"]},
        "cached_alloc_free_ns": alloc_ns,
        "torch_empty_us": {"neuron": empty_s * 1e6, "cpu": cpu_empty_s * 1e6},
        "targets": TARGETS,
    }
    on, off = import_torch_seconds(True), import_torch_seconds(False)
    result["import_torch_s"] = {"with_autoload": on, "without": off, "added_by_torchneuron": on - off}
    result["meets_targets"] = {
        "small_ops": max(result["small_op_ratio_neuron_over_cpu"].values()) <= TARGETS["small_op_ratio_max"],
        "large_ops": min(result["large_op_throughput_ratio_neuron_over_cpu"].values())
        >= TARGETS["large_op_throughput_ratio_min"],
        "cached_alloc_free": alloc_ns <= TARGETS["cached_alloc_free_ns_max"],
        "autoload_import": result["import_torch_s"]["added_by_torchneuron"] <= TARGETS["autoload_added_import_s_max"],
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
