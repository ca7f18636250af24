"""nn.SyncBatchNorm under DDP on neuron, against BatchNorm on the whole batch on the CPU; the process group's
name() and the sequence numbers of its Work objects."""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from _report import run_job
from torch.nn.parallel import DistributedDataParallel as DDP

NEURON = torch.device("neuron")


def _net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.Conv2d(4, 2, 1))


def _close(a: torch.Tensor, b: torch.Tensor, what: str) -> float:
    err = float((a.detach().cpu() - b.detach().cpu()).abs().max())
    assert err < 1e-4, f"{what}: max difference {err}"
    return err


def ddp_training_matches_whole_batch_on_cpu():
    """Two SGD steps: each rank normalises its half with the statistics of the whole batch."""
    ref = _net()  # CPU BatchNorm, whole batch
    ddp = DDP(torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(ref)).to(NEURON))
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    dopt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    n, r = dist.get_world_size(), dist.get_rank()
    g = torch.Generator().manual_seed(5)
    errs = []
    for _ in range(2):
        x = torch.randn(4 * n, 3, 6, 5, generator=g) * 2 + 1
        mine = x[4 * r:4 * (r + 1)].to(NEURON)
        out = ddp(mine)
        full = ref(x)
        errs.append(_close(out, full[4 * r:4 * (r + 1)], "forward"))
        out.square().mean().backward()
        full.square().mean().backward()
        for (name, p), q in zip(ddp.module.named_parameters(), ref.parameters()):
            errs.append(_close(p.grad, q.grad, f"grad {name}"))
        dopt.step()
        ropt.step()
        dopt.zero_grad()
        ropt.zero_grad()
    bn, rbn = ddp.module[1], ref[1]
    assert isinstance(bn, torch.nn.SyncBatchNorm) and bn.running_mean.device.type == "neuron"
    errs.append(_close(bn.running_mean, rbn.running_mean, "running_mean"))
    errs.append(_close(bn.running_var, rbn.running_var, "running_var"))
    assert int(bn.num_batches_tracked) == 2
    return max(errs)


def uneven_shards_and_channels_last():
    """Ranks with different batch sizes (the merge weights each rank by its count), channels_last input,
    an input gradient checked against the CPU."""
    ref = torch.nn.BatchNorm2d(5, momentum=0.3)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(2))
        ref.bias.uniform_(-1, 1, generator=torch.Generator().manual_seed(3))
    bn = torch.nn.SyncBatchNorm(5, momentum=0.3).to(NEURON)
    bn.load_state_dict(ref.state_dict())
    sizes = [3, 5][:dist.get_world_size()]
    x = torch.randn(sum(sizes), 5, 4, 3, generator=torch.Generator().manual_seed(3)).requires_grad_()
    r = dist.get_rank()
    start = sum(sizes[:r])
    mine = x.detach()[start:start + sizes[r]].to(NEURON).contiguous(memory_format=torch.channels_last)
    mine.requires_grad_()
    out = bn(mine)
    full = ref(x)
    errs = [_close(out, full[start:start + sizes[r]], "forward")]
    w = torch.randn(full.shape, generator=torch.Generator().manual_seed(4))
    (out * w[start:start + sizes[r]].to(NEURON)).sum().backward()
    (full * w).sum().backward()
    errs.append(_close(mine.grad, x.grad[start:start + sizes[r]], "input grad"))
    errs.append(_close(bn.running_mean, ref.running_mean, "running_mean"))
    errs.append(_close(bn.running_var, ref.running_var, "running_var"))
    return max(errs)


def bf16_statistics_in_float32():
    x = (torch.randn(8, 3, 4, 4, generator=torch.Generator().manual_seed(6)) * 3 + 100).bfloat16()
    mean, invstd = torch.batch_norm_stats(x.to(NEURON), 1e-5)
    assert mean.dtype == torch.float32 and invstd.dtype == torch.float32
    xf = x.float()
    _close(mean, xf.mean((0, 2, 3)), "bf16 mean")
    rel = (invstd.cpu() / torch.rsqrt(xf.var((0, 2, 3), unbiased=False) + 1e-5) - 1).abs().max()
    assert rel < 1e-4, rel
    return float(rel)


def group_name_and_sequence_numbers():
    world = dist.group.WORLD
    t = torch.ones(3, device=NEURON)
    seqs = []
    for _ in range(3):
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        seqs.append(work.get_sequence_number())
    assert seqs == sorted(seqs) and len(set(seqs)) == 3, seqs
    assert world.name() == "neuron", world.name()
    group_seq = world._get_sequence_number_for_group()
    assert group_seq >= seqs[-1], (group_seq, seqs)
    return {"name": world.name(), "seqs": seqs, "group seq": group_seq}


def main() -> None:
    run_job("neuron", [("ddp sync batch norm", ddp_training_matches_whole_batch_on_cpu),
                       ("uneven shards", uneven_shards_and_channels_last),
                       ("bf16 statistics", bf16_statistics_in_float32),
                       ("name and sequence numbers", group_name_and_sequence_numbers)])


if __name__ == "__main__":
    main()
