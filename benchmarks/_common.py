"""Helpers shared by the benchmarks: timing with warm-up and medians, and JSON output."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any, Callable

import torch


def per_call_seconds(fn: Callable[[], Any], sync: Callable[[], None], inner: int, repeats: int = 7) -> float:
    """Median over `repeats` of the mean time of `inner` back-to-back calls (synchronised at the end)."""
    for _ in range(max(3, inner // 10)):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def paired_seconds(cpu: Callable[[], Any], neuron: Callable[[], Any], sync: Callable[[], None], inner: int,
                   repeats: int = 9) -> tuple[float, float, float]:
    """(cpu seconds, neuron seconds, neuron/cpu ratio) per call, measured in alternation: each repeat times
    `inner` calls of one then of the other (order flipping every repeat), so both see the same machine
    load; the ratio is the median of the per-repeat ratios (a shared 2-core VM swings ±30 % between runs)."""
    for _ in range(max(3, inner // 10)):
        cpu()
        neuron()
    sync()
    cpu_s, neuron_s, ratios = [], [], []
    for r in range(repeats):
        pair = {}
        for name in (("cpu", "neuron") if r % 2 == 0 else ("neuron", "cpu")):
            fn = cpu if name == "cpu" else neuron
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            if name == "neuron":
                sync()
            pair[name] = (time.perf_counter() - start) / inner
        cpu_s.append(pair["cpu"])
        neuron_s.append(pair["neuron"])
        ratios.append(pair["neuron"] / pair["cpu"])
    return statistics.median(cpu_s), statistics.median(neuron_s), statistics.median(ratios)


def sync_for(device: str) -> Callable[[], None]:
    if device.startswith("neuron"):
        return torch.neuron.synchronize
    return lambda: None


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", help="write the JSON here (default: print it)")
    return p


def emit(result: dict[str, Any], out: str | None) -> None:
    result.setdefault("environment", {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
    })
    text = json.dumps(result, indent=2, sort_keys=True)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    print(text)


def interleaved_seconds(fns: dict[str, Callable[[], Any]], sync: Callable[[], None], inner: int,
                        repeats: int = 7) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Median seconds per call of each function, timed in alternation (each repeat runs every function
    `inner` times, in rotating order, synchronising after each), plus the per-repeat samples so callers can
    take medians of per-repeat ratios."""
    names = list(fns)
    for fn in fns.values():
        for _ in range(max(2, inner // 5)):
            fn()
    sync()
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            start = time.perf_counter()
            for _ in range(inner):
                fns[name]()
            sync()
            samples[name].append((time.perf_counter() - start) / inner)
    return {n: statistics.median(s) for n, s in samples.items()}, samples


def ratio(samples: dict[str, list[float]], num: str, den: str) -> float:
    return statistics.median(a / b for a, b in zip(samples[num], samples[den]))
