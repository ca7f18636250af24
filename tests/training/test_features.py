"""Training features a script relies on: SDPA, activation checkpointing, pinned DataLoader, autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def _both(*tensors, requires_grad=True):
    cpu = [t.clone().requires_grad_(requires_grad) for t in tensors]
    dev = [t.to("neuron").requires_grad_(requires_grad) for t in tensors]
    return cpu, dev


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_forward_and_backward_match_cpu(causal):
    torch.manual_seed(0)
    (q, k, v), (qn, kn, vn) = _both(*(torch.randn(2, 4, 16, 8) for _ in range(3)))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    outn = F.scaled_dot_product_attention(qn, kn, vn, is_causal=causal)
    assert outn.device.type == "neuron"
    torch.testing.assert_close(outn.cpu(), out, rtol=1e-4, atol=1e-5)
    grad = torch.randn_like(out)
    out.backward(grad)
    outn.backward(grad.to("neuron"))
    for a, b in ((qn, q), (kn, k), (vn, v)):
        torch.testing.assert_close(a.grad.cpu(), b.grad, rtol=1e-4, atol=1e-5)


def test_sdpa_with_boolean_mask_and_dropout_seeded():
    torch.manual_seed(0)
    q = torch.randn(1, 2, 8, 4)
    mask = torch.rand(8, 8) > 0.3
    want = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    got = F.scaled_dot_product_attention(q.to("neuron"), q.to("neuron"), q.to("neuron"), attn_mask=mask.to("neuron"))
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
    torch.manual_seed(1)
    a = F.scaled_dot_product_attention(q.to("neuron"), q.to("neuron"), q.to("neuron"), dropout_p=0.5)
    torch.manual_seed(1)
    b = F.scaled_dot_product_attention(q.to("neuron"), q.to("neuron"), q.to("neuron"), dropout_p=0.5)
    assert torch.equal(a.cpu(), b.cpu())


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_gives_the_same_gradients(reentrant):
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(32, 8)).to("neuron")
    x = torch.randn(4, 8, device="neuron", requires_grad=True)

    def grads(use_checkpoint: bool):
        block.zero_grad()
        x.grad = None
        torch.manual_seed(7)  # dropout is replayed in the recomputation from the saved RNG state
        y = checkpoint(block, x, use_reentrant=reentrant) if use_checkpoint else block(x)
        y.pow(2).sum().backward()
        return [x.grad.clone()] + [p.grad.clone() for p in block.parameters()]

    plain, ckpt = grads(False), grads(True)
    for a, b in zip(ckpt, plain):
        assert a.device.type == "neuron"
        torch.testing.assert_close(a.cpu(), b.cpu())


def test_checkpoint_restores_the_neuron_rng_state():
    from torch.utils.checkpoint import get_device_states

    x = torch.randn(3, device="neuron")
    devices, states = get_device_states(x)
    assert devices == [0] and states[0].device.type == "cpu"  # a generator state, as on CUDA


def test_dataloader_pins_for_neuron_and_copies_non_blocking():
    data = torch.utils.data.TensorDataset(torch.randn(32, 5), torch.arange(32))
    loader = torch.utils.data.DataLoader(data, batch_size=8, pin_memory=True, pin_memory_device="neuron")
    seen = []
    for x, y in loader:
        assert x.is_pinned() and y.is_pinned()
        xn = x.to("neuron", non_blocking=True)
        yn = y.to("neuron", non_blocking=True)
        torch.neuron.synchronize()
        assert torch.equal(xn.cpu(), x) and xn.device.type == "neuron"
        seen.append(yn.cpu())
    assert torch.equal(torch.cat(seen), torch.arange(32))


def test_dataloader_with_workers_pins_in_the_main_process():
    data = torch.utils.data.TensorDataset(torch.randn(16, 3))
    loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=1, pin_memory=True,
                                         pin_memory_device="neuron")
    batches = [b for (b,) in loader]
    assert all(b.is_pinned() for b in batches)
    assert torch.equal(torch.cat(batches), data.tensors[0])


def test_autograd_higher_order_and_hooks():
    x = torch.randn(5, device="neuron", requires_grad=True)
    y = (x.sin() * x).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    xc = x.detach().cpu()
    torch.testing.assert_close(g.detach().cpu(), xc.cos() * xc + xc.sin())
    torch.testing.assert_close(gg.cpu(), 2 * xc.cos() - xc * xc.sin())
    seen = []
    h = x.register_hook(lambda grad: seen.append(grad.device.type))
    (x * 2).sum().backward()
    h.remove()
    assert seen == ["neuron"]


def test_autograd_anomaly_mode_and_no_grad():
    with torch.autograd.detect_anomaly(check_nan=True):
        x = torch.tensor([1.0, 0.0], device="neuron", requires_grad=True)
        with pytest.raises(RuntimeError, match="nan|NaN"):
            (x / x).sum().backward()
    with torch.no_grad():
        assert not (torch.ones(2, device="neuron", requires_grad=True) * 2).requires_grad
