"""After torch.manual_seed(s), eager neuron draws are the CPU's draws for the same seed (docs/integrations.md,
"Random numbers"): the neuron generator runs the CPU's algorithm with its own state, seeded with the CPU's
by torch.manual_seed, so CPU-vs-neuron comparisons of random models and dropout are exact."""

import pytest
import torch
import torch.nn.functional as F

DRAWS = {
    "randn": lambda d: torch.randn(64, device=d),
    "rand": lambda d: torch.rand(3, 7, device=d),
    "randint": lambda d: torch.randint(0, 1000, (50,), device=d),
    "randperm": lambda d: torch.randperm(40, device=d),
    "normal_": lambda d: torch.empty(33, device=d).normal_(2.0, 3.0),
    "uniform_": lambda d: torch.empty(33, device=d).uniform_(-1, 1),
    "bernoulli": lambda d: torch.bernoulli(torch.full((40,), 0.3, device=d)),
    "multinomial": lambda d: torch.multinomial(torch.arange(1.0, 11.0, device=d), 5),
    "dropout": lambda d: F.dropout(torch.ones(100, device=d), 0.4),
    "init.kaiming_uniform_": lambda d: torch.nn.init.kaiming_uniform_(torch.empty(8, 5, device=d)),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_seeded_draws_equal_the_cpus(name):
    torch.manual_seed(1234)
    cpu = DRAWS[name]("cpu")
    torch.manual_seed(1234)
    neuron = DRAWS[name]("neuron").cpu()
    assert torch.equal(cpu, neuron), name


def test_a_seeded_model_is_the_cpus_model():
    torch.manual_seed(7)
    cpu = torch.nn.Linear(16, 4)
    torch.manual_seed(7)
    with torch.device("neuron"):
        dev = torch.nn.Linear(16, 4)
    assert torch.equal(cpu.weight, dev.weight.detach().cpu()) and torch.equal(cpu.bias, dev.bias.detach().cpu())


def test_streams_are_separate_as_cuda_s():
    """The two generators share the algorithm and the seed, not the state: CPU draws in between do not move
    neuron's sequence (as with CUDA's per-device generators)."""
    torch.manual_seed(3)
    a = torch.randn(5, device="neuron").cpu()
    torch.manual_seed(3)
    torch.randn(100)  # CPU only
    b = torch.randn(5, device="neuron").cpu()
    assert torch.equal(a, b)
