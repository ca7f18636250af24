"""Helpers for worker scripts: each rank writes one JSON report that the test reads back."""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path

import torch.distributed as dist


class Checks:
    """Collects named checks; a failing check records its error instead of stopping the others."""

    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failed: dict[str, str] = {}
        self.values: dict[str, object] = {}

    def run(self, name: str, fn, *args) -> None:
        try:
            result = fn(*args)
            self.passed.append(name)
            if result is not None:
                self.values[name] = result
        except Exception:  # noqa: BLE001  (recorded: the test prints every failing check)
            self.failed[name] = traceback.format_exc(limit=6)

    def write(self, rank: int | None = None) -> None:
        rank = dist.get_rank() if rank is None else rank
        out = Path(os.environ["WORKER_OUT"]) / f"rank{rank}.json"
        out.write_text(json.dumps({"rank": rank, "passed": self.passed, "failed": self.failed,
                                   "values": self.values}, default=str))



def run_job(backend: str | None, checks: list, setup=tuple) -> None:
    """A worker's main: create the group, run the named checks with the arguments ``setup()`` returns (made
    once the group exists), report, tear down. A check's return value is reported under its name."""
    if backend is None:
        dist.init_process_group()
    else:
        dist.init_process_group(backend)
    args = setup()
    report = Checks()
    for name, fn in checks:
        report.run(name, fn, *args)
    report.write()
    dist.destroy_process_group()
