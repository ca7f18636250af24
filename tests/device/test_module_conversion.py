"""module.to("neuron") / .neuron() / .cpu() keep Parameter identity, so tied weights stay tied."""

import torch


class Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("steps", torch.zeros(()))


def test_to_neuron_and_back_keeps_parameters_and_ties():
    m = Tied()
    before = m.emb.weight
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for move in (lambda: m.to("neuron"), lambda: m.cpu(), lambda: m.neuron(), lambda: m.to(device="cpu")):
        move()
        assert m.emb.weight is m.head.weight is before
        assert opt.param_groups[0]["params"][0] is before
    m.neuron()
    assert m.emb.weight.device.type == "neuron" and m.steps.device.type == "neuron"
    out = m.head(m.emb(torch.tensor([1, 2], device="neuron")))
    out.sum().backward()
    opt.step()  # the optimizer holds the very parameters that were moved
    assert m.emb.weight.grad is not None


def test_cpu_only_conversions_are_untouched():
    assert not torch.__future__.get_swap_module_params_on_conversion()
    m = torch.nn.Linear(2, 2).double()
    assert m.weight.dtype == torch.float64
    assert not torch.__future__.get_swap_module_params_on_conversion()


def test_move_keeps_identity_with_a_live_graph_and_moves_grads():
    m = Tied()
    w = m.emb.weight
    out = m.head(m.emb(torch.tensor([1, 2]))).sum()  # a graph that still references the CPU parameters
    out.backward(retain_graph=True)
    m.to("neuron")
    assert m.emb.weight is w is m.head.weight and w.device.type == "neuron"
    assert w.grad is not None and w.grad.device.type == "neuron"
    m.cpu()
    assert w.device.type == "cpu" and w.grad.device.type == "cpu"


def test_nn_module_is_not_patched():
    # Parameter identity comes from a neuron kernel (csrc/aten/native/ModuleConversion.h), not a wrapper
    for name in ("to", "cpu"):
        fn = getattr(torch.nn.Module, name)
        assert fn.__module__ == "torch.nn.modules.module" and not hasattr(fn, "__wrapped__")
    assert torch._has_compatible_shallow_copy_type(torch.ones(1), torch.ones(1, device="neuron"))
    assert torch._has_compatible_shallow_copy_type(torch.ones(1, device="neuron"), torch.ones(1))
    assert not torch._has_compatible_shallow_copy_type(torch.ones(1, device="neuron"), torch.ones(1, device="meta"))
