"""Eager overhead of the neuron device vs CPU, measured in one run (JSON).

- small ops: per-call latency neuron/cpu for add, mul, sum, a 16x16 matmul, view+add and an index gather; each
  op's CPU and neuron loops alternate within every repeat, and its ratio is the median of the per-repeat
  ratios (lower is better; target <= 1.2: the simulator runs the very CPU kernel, so the floor is one extra
  dispatch)
- large ops: throughput neuron/cpu for a 1M-element add and a 1024^2 matmul (higher is better; target >= 0.9)
- cached allocator: one allocate+free pair that hits the cache, in the C++ allocator (target <= 1 us),
  and torch.empty + release through the whole dispatcher for reference
- CPU-only program: a small CPU training loop in fresh interpreters with and without the autoload of
  torchneuron, each pair run side by side on its own core; time after `import torch` (target <= 1.01), and
  what the autoload adds to `import torch` itself
"""

from __future__ import annotations

import functools
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


def _times(autoload: bool, proc: subprocess.Popen) -> tuple[float, float]:
    stdout, _ = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"the CPU-only program failed (autoload={autoload}, exit {proc.returncode})")
    imp, run = stdout.split()
    return float(imp), float(run)


def _program_pair(pair: int, cores: list[int] | None) -> dict[bool, tuple[float, float]]:
    """One run with the autoload and one without: (import, run) seconds each. Given two cores, the runs go
    side by side, sharing whatever the host does to the VM at that moment, each on a core of its own (swapped
    every pair) with one thread; without, one after the other in alternating order."""
    order = (True, False) if pair % 2 == 0 else (False, True)
    out, side_by_side = {}, []
    for slot, autoload in enumerate(order):
        env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "1" if autoload else "0"}
        pin = None
        if cores:
            env["OMP_NUM_THREADS"] = "1"
            pin = functools.partial(os.sched_setaffinity, 0, {cores[slot]})
        proc = subprocess.Popen([sys.executable, "-c", CPU_PROGRAM], env=env, stdout=subprocess.PIPE, text=True,
                                preexec_fn=pin)
        if cores:
            side_by_side.append((autoload, proc))
        else:
            out[autoload] = _times(autoload, proc)
    for autoload, proc in side_by_side:
        out[autoload] = _times(autoload, proc)
    return out


def cpu_program(pairs: int = 41) -> dict:
    """A CPU-only program in fresh interpreters, with and without the autoload of torchneuron: (import, run)
    seconds. On two or more cores the pair runs concurrently, pinned: run back to back on this shared VM, one
    process differed from the next by up to 30 %, and 15 sequential pairs put the median ratio of two
    identical programs anywhere in 0.97-1.05; concurrent pairs have a per-pair spread of 1-3 % and 41 of them
    put an identical pair's median within 0.3 % of 1."""
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores = available[:2] if len(available) >= 2 else None
    runs = [_program_pair(i, cores) for i in range(pairs)]
    ratios = sorted(r[True][1] / r[False][1] for r in runs)
    return {
        "method": "concurrent, one pinned core and one thread each" if cores else "sequential, alternated",
        "pairs": pairs,
        "run_s_with_autoload": statistics.median(r[True][1] for r in runs),
        "run_s_without": statistics.median(r[False][1] for r in runs),
        "run_ratio": statistics.median(ratios),
        "run_ratio_quartiles": [ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]],
        "import_s_with_autoload": statistics.median(r[True][0] for r in runs),
        "import_s_without": statistics.median(r[False][0] for r in runs),
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
