"""DDP on neuron: bucketing, no_sync, find_unused_parameters; training matches one process.

The group is created with init_process_group() and no backend: neuron is the accelerator, so the default
device-backend map picks the neuron backend.
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from _report import run_job
from _training import NEURON, assert_same_params, batches, model, shard, train
from torch.nn.parallel import DistributedDataParallel as DDP


def ddp_matches_single_process():
    ref = model()
    ddp = DDP(copy.deepcopy(ref), bucket_cap_mb=0.01)  # ~10 KB buckets: several per backward
    data = batches(3)
    train(ref, data)
    train(ddp, data, step_batches=lambda b: [shard(b)])
    assert_same_params(ddp.module, ref)
    log = ddp._get_ddp_logging_data()  # ~10 KB buckets once DDP rebuilt them after the first step
    assert log["has_rebuilt_buckets"] == 1 and log["num_buckets_reduced"] > 3, log
    assert len(log["rebuilt_bucket_sizes"].split(",")) == log["num_buckets_reduced"], log
    # DDP's runtime stats, timed on the neuron stream (csrc/distributed/ReducerTimer.cpp), as CUDA's are
    for stat in ("avg_forward_compute_time", "avg_backward_compute_time", "avg_backward_comm_time"):
        assert log.get(stat, 0) > 0, (stat, log)


def ddp_no_sync_accumulation():
    ref = model()
    ddp = DDP(copy.deepcopy(ref))
    data = batches(2, seed=2)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    dopt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for idx, tgt in data:
        # two micro-batches of this rank's share; gradients synchronised only on the second
        mine_idx, mine_tgt = shard((idx, tgt))
        half = mine_idx.shape[0] // 2
        dopt.zero_grad()
        with ddp.no_sync():
            (ddp(mine_idx[:half], mine_tgt[:half])[1] / 2).backward()
        (ddp(mine_idx[half:], mine_tgt[half:])[1] / 2).backward()
        dopt.step()
        ropt.zero_grad()
        n = dist.get_world_size()
        per = idx.shape[0] // n
        for r in range(n):
            for part in (slice(r * per, r * per + per // 2), slice(r * per + per // 2, (r + 1) * per)):
                (ref(idx[part], tgt[part])[1] / (2 * n)).backward()
        ropt.step()
    assert_same_params(ddp.module, ref)


class WithUnused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(8, 8)
        self.unused = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.used(x).relu().sum()


def ddp_find_unused_parameters():
    torch.manual_seed(3)
    ref = WithUnused().to(NEURON)
    ddp = DDP(copy.deepcopy(ref), find_unused_parameters=True)
    x = torch.randn(4 * dist.get_world_size(), 8, device=NEURON)
    ddp(x.chunk(dist.get_world_size())[dist.get_rank()]).backward()
    ref(x).backward()
    assert ddp.module.unused.weight.grad is None
    n = dist.get_world_size()
    torch.testing.assert_close(ddp.module.used.weight.grad.cpu(), ref.used.weight.grad.cpu() / n, atol=1e-5,
                               rtol=1e-4)


def the_group():
    world = dist.group.WORLD
    return {"backend": world._get_backend(torch.device("neuron")).name(), "default backend": world._get_backend_name(),
            "device": torch.neuron.current_device()}


def main() -> None:
    # no backend: neuron is the accelerator, so the default device-backend map picks "neuron"
    run_job(None, [("the group", the_group), ("ddp matches single process", ddp_matches_single_process),
                   ("ddp no_sync", ddp_no_sync_accumulation),
                   ("ddp find_unused_parameters", ddp_find_unused_parameters)])


if __name__ == "__main__":
    main()
