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


def test_dropout_draws_from_the_neuron_generator_not_the_cpus():
    """native_dropout's CPU kernel has no Generator argument; on neuron its mask must still come from the
    neuron generator: the CPU's stream stays untouched and equal seeds give the CPU's exact result."""
    import torch.nn.functional as F

    x = torch.randn(1000)
    torch.manual_seed(0)
    expected = F.dropout(x, 0.3)
    torch.manual_seed(0)
    cpu_stream = torch.rand(3)
    torch.manual_seed(0)
    got = F.dropout(x.to("neuron"), 0.3).cpu()
    assert torch.equal(torch.rand(3), cpu_stream)
    assert torch.equal(got, expected)
    out, mask = torch.native_dropout(x.to("neuron"), 0.3, False)
    assert mask.dtype == torch.bool and torch.equal(out.cpu(), x)
