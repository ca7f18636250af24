import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's compile/distributed example, as a TorchNeuron user writes it: one process per NeuronCore
# (torchrun), dist.init_process_group("neuron"), a DDP model compiled with torch.compile(backend="neuron")
# and trained on each rank's share of the batch, and a compiled function with a functional all-reduce inside.
# Rank 0 checks the result against the same training on the whole batch in one CPU process.
#
#     torchrun --standalone --nproc-per-node 2 compile_distributed.py
#
# Rank 0 prints one JSON line: world size, devices, the losses and the CPU's, and the largest errors.

import copy
import json

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.nn.parallel import DistributedDataParallel as DDP


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def main():
    dist.init_process_group("neuron")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("neuron", torch_neuronx.current_device())

    cpu_model = make_model()
    model = DDP(copy.deepcopy(cpu_model).to(device))
    compiled = torch.compile(model, backend="neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1)

    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, 16, generator=data), torch.randn(32, 1, generator=data)
    mine = slice(rank * 32 // world, (rank + 1) * 32 // world)
    losses, cpu_losses = [], []
    for _ in range(4):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(x[mine].to(device)), y[mine].to(device))
        loss.backward()  # DDP averages the gradients across ranks
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        losses.append(avg.item())
        cpu_opt.zero_grad()
        cpu_loss = torch.nn.functional.mse_loss(cpu_model(x), y)
        cpu_loss.backward()
        cpu_opt.step()
        cpu_losses.append(cpu_loss.item())

    @torch.compile(backend="neuron", fullgraph=True)
    def global_norm(t):
        return funcol.all_reduce(t.square().sum(), "sum", dist.group.WORLD).sqrt()

    part = x[mine].to(device)
    norm = global_norm(part).item()
    devices = [None] * world
    dist.all_gather_object(devices, str(device))
    if rank == 0:
        print(json.dumps({
            "example": "compile/distributed", "world": world, "devices": devices,
            "losses": losses, "cpu_losses": cpu_losses,
            "param_err": max((p.detach().cpu() - q.detach()).abs().max().item()
                             for p, q in zip(model.module.parameters(), cpu_model.parameters())),
            "allreduce_norm": norm, "cpu_norm": x.square().sum().sqrt().item(),
        }))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
