"""Per-device generators: seeding, determinism, state round-trip, independence from the CPU generator."""

import torch


def test_same_seed_same_numbers():
    torch.neuron.manual_seed(1234)
    a = torch.rand(1000, device="neuron")
    torch.neuron.manual_seed(1234)
    b = torch.rand(1000, device="neuron")
    assert torch.equal(a.cpu(), b.cpu())
    torch.neuron.manual_seed(4321)
    c = torch.rand(1000, device="neuron")
    assert not torch.equal(a.cpu(), c.cpu())


def test_torch_manual_seed_seeds_all_devices():
    torch.manual_seed(7)
    a = [torch.randn(8, device=f"neuron:{i}").cpu() for i in range(torch.neuron.device_count())]
    torch.manual_seed(7)
    b = [torch.randn(8, device=f"neuron:{i}").cpu() for i in range(torch.neuron.device_count())]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert torch.neuron.initial_seed() == 7


def test_state_round_trip():
    torch.neuron.manual_seed(99)
    state = torch.neuron.get_rng_state()
    a = torch.randint(0, 1000, (64,), device="neuron")
    torch.neuron.set_rng_state(state)
    b = torch.randint(0, 1000, (64,), device="neuron")
    assert torch.equal(a.cpu(), b.cpu())


def test_neuron_generator_is_independent_of_cpu():
    torch.neuron.manual_seed(5)
    torch.rand(10)  # consuming CPU randomness must not move the neuron stream
    a = torch.rand(10, device="neuron")
    torch.neuron.manual_seed(5)
    b = torch.rand(10, device="neuron")
    assert torch.equal(a.cpu(), b.cpu())


def test_explicit_generator_object():
    g = torch.Generator(device="neuron")
    g.manual_seed(3)
    a = torch.randn(16, device="neuron", generator=g)
    g.manual_seed(3)
    b = torch.randn(16, device="neuron", generator=g)
    assert g.device.type == "neuron"
    assert torch.equal(a.cpu(), b.cpu())
