"""Hugging Face models (tiny configs) train on neuron as on the CPU: forward, backward and AdamW steps."""

import copy

import pytest
import torch

from .hf_models import MODELS, batch, to

FAST_BF16 = {"llama", "gpt2"}


def _steps(name: str, model: torch.nn.Module, device: str, steps: int):
    torch.manual_seed(1)  # dropout draws from the device's generator: equal seeds give equal masks
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses = []
    logits = None
    for step in range(steps):
        out = model(**to(batch(name, seed=step), device))
        out.loss.backward()
        if step == 0:
            logits = out.logits.detach().float().cpu()
            grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}
        opt.step()
        opt.zero_grad()
        losses.append(out.loss.item())
    return losses, logits, grads


CASES = [pytest.param(name, torch.float32, id=f"{name}-fp32") for name in MODELS] + [
    pytest.param(name, torch.bfloat16, id=f"{name}-bf16", marks=() if name in FAST_BF16 else pytest.mark.slow)
    for name in MODELS]


@pytest.mark.parametrize("name, dtype", CASES)
def test_training_steps_match_cpu(name, dtype):
    torch.manual_seed(0)
    cpu = MODELS[name]().to(dtype)
    neuron = copy.deepcopy(cpu)
    cpu_losses, cpu_logits, cpu_grads = _steps(name, cpu, "cpu", 3)
    n_losses, n_logits, n_grads = _steps(name, neuron, "neuron", 3)

    assert all(p.device.type == "neuron" for p in neuron.parameters())
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    torch.testing.assert_close(n_logits, cpu_logits, **tol)
    assert n_grads.keys() == cpu_grads.keys()
    for k in cpu_grads:
        torch.testing.assert_close(n_grads[k], cpu_grads[k], **tol, msg=lambda m, k=k: f"grad {k}: {m}")
    torch.testing.assert_close(torch.tensor(n_losses), torch.tensor(cpu_losses), **tol)
    for (k, a), (_, b) in zip(neuron.state_dict().items(), cpu.state_dict().items()):
        torch.testing.assert_close(a.cpu(), b, **tol, msg=lambda m, k=k: f"after AdamW, {k}: {m}")
