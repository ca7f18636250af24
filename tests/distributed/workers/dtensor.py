"""DTensor on neuron: distribute_tensor, Shard/Replicate redistribution, a tensor-parallel Linear pair, and
tensor-parallel training of the GPT-style model matching one process."""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from _report import run_job
from _training import NEURON, assert_same_params, batches, model, train
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)


def redistribution(mesh):
    n, r = mesh.size(), dist.get_rank()
    x = torch.arange(4 * n * 6, dtype=torch.float32).reshape(4 * n, 6).to(NEURON)
    d = distribute_tensor(x, mesh, [Shard(0)])
    assert d.to_local().shape == (4, 6) and d.to_local().device.type == "neuron"
    torch.testing.assert_close(d.to_local().cpu(), x[4 * r: 4 * r + 4].cpu())
    rep = d.redistribute(mesh, [Replicate()])
    torch.testing.assert_close(rep.to_local().cpu(), x.cpu())
    cols = rep.redistribute(mesh, [Shard(1)]) if 6 % n == 0 else d.redistribute(mesh, [Shard(0)])
    torch.testing.assert_close(cols.full_tensor().cpu(), x.cpu())
    s1 = d.redistribute(mesh, [Shard(1)])  # all-to-all (uneven when 6 % n != 0)
    torch.testing.assert_close(s1.full_tensor().cpu(), x.cpu())
    y = (d * 2 + 1).sum()  # a partial reduction on sharded data
    torch.testing.assert_close(y.full_tensor().cpu(), (x * 2 + 1).sum().cpu())


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def tensor_parallel_pair(mesh):
    torch.manual_seed(0)
    ref = MLP().to(NEURON)
    tp = parallelize_module(copy.deepcopy(ref), mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    assert tp.fc1.weight.to_local().shape == (32 // mesh.size(), 16)
    x = torch.randn(5, 16, device=NEURON)
    out, expected = tp(x), ref(x)
    torch.testing.assert_close(out.cpu(), expected.cpu(), atol=1e-5, rtol=1e-4)
    out.square().sum().backward()
    expected.square().sum().backward()
    torch.testing.assert_close(tp.fc1.weight.grad.full_tensor().cpu(), ref.fc1.weight.grad.cpu(), atol=1e-4,
                               rtol=1e-4)


def tensor_parallel_gpt(mesh):
    ref = model()
    tp = copy.deepcopy(ref)
    for block in tp.blocks:
        parallelize_module(block, mesh, {"mlp.0": ColwiseParallel(), "mlp.2": RowwiseParallel()})
    data = batches(3)
    train(ref, data)
    # every rank runs the whole batch; the MLPs' weights are split across ranks (DTensors next to plain
    # parameters: the optimizer's foreach kernels need one kind, so it steps them one by one)
    train(tp, data, opt=torch.optim.SGD(tp.parameters(), lr=0.05, momentum=0.9, foreach=False))
    assert_same_params(tp, ref, full=lambda p: p.full_tensor() if hasattr(p, "full_tensor") else p)


def main() -> None:
    run_job("neuron", [("redistribution", redistribution), ("tensor-parallel linear pair", tensor_parallel_pair),
                       ("tensor-parallel gpt training", tensor_parallel_gpt)],
            setup=lambda: (init_device_mesh("neuron", (dist.get_world_size(),)),))


if __name__ == "__main__":
    main()
