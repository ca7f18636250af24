"""Eager overhead of the neuron device vs CPU, measured in one run (JSON).

- small ops: per-call latency neuron/cpu for add, mul, sum, a 16x16 matmul, view+add and an index gather; each
  op's CPU and neuron loops alternate within every repeat, and its ratio is the median of the per-repeat
  ratios (lower is better; target <= 1.2: the simulator runs the very CPU kernel, so the floor is one extra
  dispatch)
- large ops: throughput neuron/cpu for a 1M-element add and a 1024^2 matmul (higher is better; target >= 0.9)
- cached allocator: one allocate+free pair that hits the cache, in the C++ allocator (target <= 1 us),
  and torch.empty + release through the whole dispatcher for reference
- CPU-only program: a small CPU training loop in fresh interpreters with and without the autoload of
  torchneuron, alternated; time after `import torch` (target <= 1.01), and what the autoload adds to
  `import torch` itself
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import torchneuron  # noqa: E402,F401
from _common import emit, paired_seconds, parser, per_call_seconds, sync_for  # noqa: E402

TARGETS = {"small_op_ratio_max": 1.2, "large_op_throughput_ratio_min": 0.9, "cached_alloc_free_ns_max": 1000,
           "cpu_program_ratio_max": 1.01, "autoload_added_import_s_max": 0.3}


def small_ops(device: str) -> dict:
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(16, 16, generator=g).to(device) for _ in range(2))
    v = torch.randn(64, generator=g).to(device)
    idx = torch.randint(0, 64, (16,), generator=g).to(device)
    return {
        "add": lambda: torch.add(a, b),
        "mul": lambda: torch.mul(a, b),
        "sum": lambda: v.sum(),
        "matmul_16x16": lambda: a @ b,
        "view_add": lambda: a.view(256) + b.view(256),
        "index": lambda: v[idx],
    }


def small_op_ratios(inner: int, repeats: int) -> dict[str, dict[str, float]]:
    cpu, neuron = small_ops("cpu"), small_ops("neuron")
    out = {}
    for name in cpu:
        c, n, r = paired_seconds(cpu[name], neuron[name], sync_for("neuron"), inner=inner, repeats=repeats)
        out[name] = {"cpu_us": c * 1e6, "neuron_us": n * 1e6, "ratio": r}
    return out


def large_ops(device: str) -> dict[str, float]:
    x, y = torch.randn(1 << 20, device=device), torch.randn(1 << 20, device=device)
    m, n = torch.randn(1024, 1024, device=device), torch.randn(1024, 1024, device=device)
    ops = {"add_1M": (lambda: torch.add(x, y), 200), "matmul_1024": (lambda: m @ n, 10)}
    return {name: per_call_seconds(fn, sync_for(device), inner=inner, repeats=5) for name, (fn, inner) in ops.items()}


CPU_PROGRAM = """
import time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.AdamW(model.parameters())
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
for _ in range(300):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
print(t1 - t0, time.perf_counter() - t1)
"""


def cpu_program(repeats: int = 15) -> dict[str, float]:
    """A CPU-only program in fresh interpreters, autoload on and off alternated: (import, run) seconds. 15
    pairs: with 7 the median ratio of two identical programs moved by ±0.05 on a shared 2-core VM, five times
    the 1.01 target."""
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for r in range(repeats):
        for autoload in ((True, False) if r % 2 == 0 else (False, True)):
            env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "1" if autoload else "0"}
            out = subprocess.run([sys.executable, "-c", CPU_PROGRAM], env=env, capture_output=True, text=True,
                                 check=True).stdout.split()
            runs[autoload].append((float(out[0]), float(out[1])))
    ratios = [on[1] / off[1] for on, off in zip(runs[True], runs[False])]
    return {
        "run_s_with_autoload": statistics.median(t[1] for t in runs[True]),
        "run_s_without": statistics.median(t[1] for t in runs[False]),
        "run_ratio": statistics.median(ratios),
        "import_s_with_autoload": statistics.median(t[0] for t in runs[True]),
        "import_s_without": statistics.median(t[0] for t in runs[False]),
    }


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--small-only", action="store_true", help="only the small-op ratios")
    p.add_argument("--repeats", type=int, default=31, help="alternations of CPU and neuron per small op")
    p.add_argument("--inner", type=int, default=500, help="calls per small op and repeat")
    args = p.parse_args()
    small = small_op_ratios(inner=args.inner, repeats=args.repeats)
    result: dict = {
        "small_op": small,
        "small_op_ratio_neuron_over_cpu": {k: v["ratio"] for k, v in small.items()},
        "small_op_ratio_max": max(v["ratio"] for v in small.values()),
        "targets": TARGETS,
    }
    meets = {"small_ops": result["small_op_ratio_max"] <= TARGETS["small_op_ratio_max"]}
    if not args.small_only:
        large = {"cpu": large_ops("cpu"), "neuron": large_ops("neuron")}
        alloc_ns = torchneuron._C._bench_allocator(4096, 200000)
        empty_s = per_call_seconds(lambda: torch.empty(1024, device="neuron"), lambda: None, inner=20000)
        cpu_empty_s = per_call_seconds(lambda: torch.empty(1024), lambda: None, inner=20000)
        prog = cpu_program()
        result.update({
            "large_op_time_ms": {d: {k: v * 1e3 for k, v in ops.items()} for d, ops in large.items()},
            "large_op_throughput_ratio_neuron_over_cpu": {k: large["cpu"][k] / large["neuron"][k]
                                                          for k in large["cpu"]},
            "cached_alloc_free_ns": alloc_ns,
            "torch_empty_us": {"neuron": empty_s * 1e6, "cpu": cpu_empty_s * 1e6},
            "cpu_only_program": prog,
        })
        meets.update({
            "large_ops": min(result["large_op_throughput_ratio_neuron_over_cpu"].values())
            >= TARGETS["large_op_throughput_ratio_min"],
            "cached_alloc_free": alloc_ns <= TARGETS["cached_alloc_free_ns_max"],
            "cpu_only_program": prog["run_ratio"] <= TARGETS["cpu_program_ratio_max"],
            "autoload_import": prog["import_s_with_autoload"] - prog["import_s_without"]
            <= TARGETS["autoload_added_import_s_max"],
        })
    result["meets_targets"] = meets
    emit(result, args.out)


if __name__ == "__main__":
    main()
