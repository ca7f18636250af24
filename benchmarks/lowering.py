#!/usr/bin/env python
"""Lowering benchmark: cold lower+compile time per op, and warm dispatch latency in strict eager mode
(TORCHNEURON_EAGER=lowered: every op through its cached StableHLO program on XLA:CPU) versus default eager
(host kernels), on the neuron device. Prints JSON (and writes it with --out PATH).

    python benchmarks/lowering.py --out bench-results/lowering.json

Cold times use a fresh compile cache (a temporary TORCHNEURON_CACHE_DIR), so they include tracing,
torch-mlir lowering and XLA:CPU compilation. Warm latency is the median over repeats of the mean over a
loop of calls; the target is <= 30 us per op.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_US = 30.0


def _ops(torch, dev):
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(dev)

    a, b = r(64, 64), r(64, 64)
    v = r(4096)
    x4 = r(2, 8, 16, 16)
    w = r(8, 8, 3, 3)
    ln_w, ln_b = r(64), r(64)
    mask = a > 0
    return {
        "add": lambda: a + b,
        "mul_scalar": lambda: a * 0.5,
        "relu": lambda: torch.relu(a),
        "exp": lambda: torch.exp(v),
        "gelu": lambda: torch.nn.functional.gelu(a),
        "where": lambda: torch.where(mask, a, b),
        "sum_dim": lambda: a.sum(dim=1),
        "mm": lambda: a @ b,
        "softmax": lambda: torch.softmax(a, dim=-1),
        "layer_norm": lambda: torch.nn.functional.layer_norm(a, (64,), ln_w, ln_b),
        "cat": lambda: torch.cat([a, b], dim=0),
        "conv2d": lambda: torch.nn.functional.conv2d(x4, w, padding=1),
    }


def _loop_us(fn, sync, n: int, repeats: int) -> float:
    for _ in range(20):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="", help="write the JSON here too")
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args()

    cache_dir = tempfile.mkdtemp(prefix="torchneuron-bench-cache-")
    os.environ["TORCHNEURON_CACHE_DIR"] = cache_dir
    import warnings

    import torch

    warnings.simplefilter("ignore")
    try:
        import torchneuron  # noqa: F401
        from torchneuron.programs import strict_eager

        on_device = strict_eager.install(False) is not False and torch.neuron.device_count() > 0  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the device layer is optional for this benchmark
        on_device = False
    from torchneuron.programs.single_op import program_cache, run_op

    dev = "neuron" if on_device else "cpu"
    sync = (lambda: torch.neuron.synchronize()) if on_device else (lambda: None)  # type: ignore[attr-defined]
    ops = _ops(torch, dev)

    def strict(on: bool) -> None:
        if on_device:
            strict_eager.install(on)

    if not on_device:  # no device layer: drive the same programs through the dispatcher-free entry point
        from torch.utils._python_dispatch import TorchDispatchMode

        class Strict(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return run_op(func, args, kwargs or {})

        mode = Strict()

        def strict(on: bool) -> None:  # noqa: F811
            (mode.__enter__ if on else (lambda: mode.__exit__(None, None, None)))()

    results = {}
    for name, fn in ops.items():
        program_cache().clear()
        strict(True)
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001 - reported, not fatal: e.g. an op the device layer lacks
            strict(False)
            results[name] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
            continue
        sync()
        cold_ms = (time.perf_counter() - t0) * 1e3
        strict_out = out.cpu()
        warm = _loop_us(fn, sync, a.iters, a.repeats)
        strict(False)
        host_out = fn().cpu()
        base = _loop_us(fn, sync, a.iters, a.repeats)
        ok = torch.allclose(strict_out.float(), host_out.float(), rtol=1e-4, atol=1e-4)
        results[name] = {"cold_lower_compile_ms": round(cold_ms, 2), "warm_strict_us": round(warm, 2),
                         "default_eager_us": round(base, 2), "strict_over_default": round(warm / base, 2),
                         "matches_default": bool(ok)}
    measured = {k: r for k, r in results.items() if "skipped" not in r}
    warm_all = [r["warm_strict_us"] for r in measured.values()]
    report = {
        "benchmark": "lowering",
        "device": dev,
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                 "torch": torch.__version__},
        "ops": results,
        "summary": {
            "median_cold_lower_compile_ms": round(
                statistics.median(r["cold_lower_compile_ms"] for r in measured.values()), 2),
            "median_warm_strict_us": round(statistics.median(warm_all), 2),
            "median_default_eager_us": round(statistics.median(r["default_eager_us"] for r in measured.values()), 2),
            "median_strict_over_default": round(
                statistics.median(r["strict_over_default"] for r in measured.values()), 2),
            "target_warm_strict_us": TARGET_US,
            "ops_within_target": sum(w <= TARGET_US for w in warm_all),
            "ops": len(warm_all),
            "all_match": all(r["matches_default"] for r in measured.values()),
            "skipped": sorted(set(results) - set(measured)),
        },
    }
    text = json.dumps(report, indent=1)
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
