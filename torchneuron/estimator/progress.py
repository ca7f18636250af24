"""Progress on long traces: stage lines on stderr with elapsed time, and a running count of the calls a trace
has made (a large model takes tens of seconds to trace with fake tensors)."""

from __future__ import annotations

import sys
import time

import torch
from torch.overrides import TorchFunctionMode


class _Counter(TorchFunctionMode):
    def __init__(self, progress: Progress):
        super().__init__()
        self.progress = progress

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.progress.tick()
        return func(*args, **(kwargs or {}))


class Progress:
    """``with Progress("what", enabled) as p: p.stage("tracing")``; prints nothing when not enabled."""

    def __init__(self, what: str, enabled: bool = True, every_s: float = 2.0, stream=None):
        self.what, self.enabled, self.every_s = what, enabled, every_s
        self.stream = stream or sys.stderr
        self.calls = 0
        self._t0 = self._last = time.perf_counter()
        self._mode: _Counter | None = None
        self._stage = ""

    def __enter__(self) -> Progress:
        if self.enabled:
            self._mode = _Counter(self)
            self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._mode is not None:
            self._mode.__exit__(*exc)
            self._print(f"{self.what}: done in {time.perf_counter() - self._t0:.1f} s")

    def stage(self, name: str) -> None:
        self._stage = name
        self._print(f"{self.what}: {name} ...")

    def tick(self) -> None:
        self.calls += 1
        now = time.perf_counter()
        if now - self._last >= self.every_s:
            self._last = now
            self._print(f"{self.what}: {self._stage}: {self.calls:,} calls traced, {now - self._t0:.1f} s")

    def _print(self, text: str) -> None:
        if self.enabled:
            with torch._C.DisableTorchFunction():
                print(text, file=self.stream, flush=True)
