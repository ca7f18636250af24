"""The training loop the DDP / FSDP2 / tensor-parallel workers compare against single-process training."""

from __future__ import annotations

import torch
import torch.distributed as dist

from torchneuron.testing.models import GPT

NEURON = torch.device("neuron")
VOCAB, CTX, BATCH = 64, 16, 8


def model(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(vocab=VOCAB, d=32, heads=4, layers=2, ctx=CTX).to(NEURON)


def batches(steps: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The global batches (on every rank: the same data)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        seq = torch.randint(0, VOCAB, (BATCH, CTX + 1), generator=g)
        out.append((seq[:, :-1].to(NEURON), seq[:, 1:].to(NEURON)))
    return out


def shard(batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's share of a global batch (data parallelism)."""
    n, r = dist.get_world_size(), dist.get_rank()
    per = BATCH // n
    return batch[0][r * per:(r + 1) * per], batch[1][r * per:(r + 1) * per]


def train(m: torch.nn.Module, data, step_batches=lambda b: [b], opt=None) -> list[float]:
    """SGD-with-momentum steps (an update proportional to the gradient keeps fp32 differences fp32-sized; Adam
    would blow up the rounding of near-zero gradients); ``step_batches`` maps a global batch to the
    micro-batches one step accumulates."""
    opt = opt or torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for batch in data:
        opt.zero_grad()
        micro = step_batches(batch)
        for idx, tgt in micro:
            _, loss = m(idx, tgt)
            (loss / len(micro)).backward()
            losses.append(loss.item())
        opt.step()
    return losses


def assert_same_params(actual: torch.nn.Module, expected: torch.nn.Module, atol=1e-5, rtol=1e-4,
                       full=lambda p: p) -> None:
    a = dict(actual.named_parameters())
    e = dict(expected.named_parameters())
    assert a.keys() == e.keys(), (sorted(a), sorted(e))
    for name, expected_param in e.items():
        torch.testing.assert_close(full(a[name]).detach().cpu(), full(expected_param).detach().cpu(), atol=atol,
                                   rtol=rtol, msg=lambda m, name=name: f"{name}: {m}")
