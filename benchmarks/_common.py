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
