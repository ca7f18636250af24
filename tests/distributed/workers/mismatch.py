"""Ranks that pass different tensors to one all_reduce (4 vs 6 elements; float32 vs int32): every rank raises
instead of one aborting and the other reading garbage, and the group still works afterwards. The test runs it
with and without TORCH_DISTRIBUTED_DEBUG=DETAIL. Run under torchrun."""

from __future__ import annotations

import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from _report import Checks


def _mismatched(kind: str, rank: int) -> torch.Tensor:
    if kind == "size":
        return torch.ones(4 if rank == 0 else 6, device="neuron")
    return torch.ones(4, device="neuron", dtype=torch.float32 if rank == 0 else torch.int32)


def main() -> None:
    kind = sys.argv[1]  # "size" | "dtype"
    dist.init_process_group("neuron", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    checks = Checks()
    t = _mismatched(kind, rank)
    try:
        dist.all_reduce(t)
        checks.values["error"] = None
        checks.values["result"] = t.cpu().tolist()
    except Exception as e:  # noqa: BLE001  (the test checks the type name and message)
        checks.values["error"] = f"{type(e).__module__}.{type(e).__name__}: {e}"

    def still_works():
        ok = torch.ones(3, device="neuron")
        dist.all_reduce(ok)
        out = torch.empty(world * 2, device="neuron")
        dist.all_gather_into_tensor(out, torch.full((2,), float(rank), device="neuron"))
        dist.broadcast(ok, src=0)
        dist.barrier()
        return {"all_reduce": ok.cpu().tolist(), "all_gather": out.cpu().tolist()}

    checks.run("still works", still_works)
    checks.values["backend"] = type(dist.distributed_c10d._get_default_group()._get_backend(
        torch.device("neuron"))).__name__
    checks.write(rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
