"""A peer that dies, or stops calling collectives: the survivor's collective raises within the group's
timeout instead of hanging. Launched as plain processes (torchrun would tear the job down itself)."""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from _report import Checks

TIMEOUT_S = 3.0


def main() -> None:
    mode = sys.argv[1]  # "exit" | "stall"
    dist.init_process_group("neuron", timeout=timedelta(seconds=TIMEOUT_S))
    rank = dist.get_rank()
    t = torch.ones(1024, device="neuron")
    dist.all_reduce(t)  # the group works
    dist.barrier()
    if rank == 1:
        if mode == "exit":
            os._exit(3)  # no clean shutdown: a killed process
        time.sleep(TIMEOUT_S * 2)  # alive, but never joins the next collective
        os._exit(0)
    checks = Checks()
    checks.values["first"] = t[0].item()
    start = time.monotonic()
    try:
        time.sleep(0.5 if mode == "exit" else 0)
        dist.all_reduce(t)
        checks.values["error"] = None
    except Exception as e:  # noqa: BLE001  (the test checks the type name and message)
        checks.values["error"] = f"{type(e).__module__}.{type(e).__name__}: {e}"
    checks.values["elapsed"] = time.monotonic() - start
    checks.write(rank)
    os._exit(0)  # the group cannot be torn down cleanly with a dead peer


if __name__ == "__main__":
    main()
