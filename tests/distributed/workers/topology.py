"""Where each process of a (multi-node) torchrun job landed: ranks, its device, the cores it sees, and a
collective across all of them."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from _report import Checks


def main() -> None:
    dist.init_process_group("neuron")
    checks = Checks()
    v = checks.values
    v["local_rank"] = int(os.environ["LOCAL_RANK"])
    v["group_rank"] = int(os.environ["GROUP_RANK"])  # the node's rank, assigned by the rendezvous
    v["world"] = dist.get_world_size()
    v["device"] = torch.neuron.current_device()
    v["device_count"] = torch.neuron.device_count()
    v["visible_cores"] = os.environ.get("NEURON_RT_VISIBLE_CORES")
    t = torch.full((8,), float(dist.get_rank() + 1), device="neuron")
    dist.all_reduce(t)
    v["sum"] = t[0].item()
    g = [torch.empty(1, device="neuron") for _ in range(dist.get_world_size())]
    dist.all_gather(g, torch.tensor([float(v["device"])], device="neuron"))
    v["devices_everywhere"] = [x.item() for x in g]
    checks.write()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
