"""torch.optim on neuron: SGD/Adam/AdamW in their for-loop, foreach and fused forms, and GradScaler.

fused=True works on neuron without any patch: torch.optim asks
torch.utils._foreach_utils._get_fused_kernels_supported_devices(), which lists the PrivateUse1 backend's
name (torch._C._get_privateuse1_backend_name()) once torchneuron renames it to "neuron"; the fused kernels
(_fused_adam_, _fused_adamw_, _fused_sgd_) then run through the host path on the device buffers.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchneuron
from torchneuron.testing.models import MLP

OPTIMIZERS = {
    "sgd": lambda params, **kw: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4, **kw),
    "adam": lambda params, **kw: torch.optim.Adam(params, lr=1e-2, amsgrad=True, **kw),
    "adamw": lambda params, **kw: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, **kw),
}
FORMS = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
FUSED_KERNEL = {"sgd": "aten::_fused_sgd_", "adam": "aten::_fused_adam_", "adamw": "aten::_fused_adamw_"}


def run(device: str, name: str, form: str, steps: int = 5):
    torch.manual_seed(0)
    model = MLP().to(device)
    opt = OPTIMIZERS[name](model.parameters(), **FORMS[form])
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = torch.randn(8, 32, generator=g).to(device), torch.randint(0, 10, (8,), generator=g).to(device)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return {n: p.detach().cpu() for n, p in model.named_parameters()}, opt


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_cpu(name, form):
    torchneuron.reset_executed_ops()
    neuron, opt = run("neuron", name, form)
    ops = torchneuron.executed_ops()
    cpu, _ = run("cpu", name, form)
    for key in cpu:
        torch.testing.assert_close(neuron[key], cpu[key], rtol=1e-5, atol=1e-6, msg=lambda m: f"{key}: {m}")
    for state in opt.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                assert value.device.type == "neuron"
    if form == "fused":
        assert ops.get(FUSED_KERNEL[name], 0) > 0, f"fused kernel did not run on neuron: {sorted(ops)}"
    else:
        # foreach ops reach neuron through their composite (per-tensor) kernels, like any backend without
        # dedicated multi-tensor kernels; what must not happen is the fused path being taken silently.
        assert not any(k.startswith("aten::_fused_") for k in ops), sorted(ops)


def test_fused_is_a_supported_device():
    from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices, _get_fused_kernels_supported_devices

    assert "neuron" in _get_fused_kernels_supported_devices()
    assert "neuron" in _get_foreach_kernels_supported_devices()


def _scaler_run(device: str, inject_inf_at: int | None, steps: int = 4):
    torch.manual_seed(0)
    model = MLP().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    g = torch.Generator().manual_seed(2)
    scales, skipped = [], []
    for i in range(steps):
        x, y = torch.randn(8, 32, generator=g).to(device), torch.randint(0, 10, (8,), generator=g).to(device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if i == inject_inf_at:
            next(model.parameters()).grad[0, 0] = float("inf")
        before = [p.detach().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        skipped.append(all(torch.equal(b, p.detach()) for b, p in zip(before, model.parameters())))
        scales.append(scaler.get_scale())
    return scales, skipped, {n: p.detach().cpu() for n, p in model.named_parameters()}


def test_grad_scaler_matches_cpu_and_skips_inf_steps():
    n_scales, n_skipped, n_params = _scaler_run("neuron", inject_inf_at=1)
    c_scales, c_skipped, c_params = _scaler_run("cpu", inject_inf_at=1)
    assert n_skipped == [False, True, False, False]
    assert n_skipped == c_skipped
    assert n_scales == c_scales  # halved on the inf step, doubled after growth_interval clean steps
    assert n_scales[1] == 2.0**9
    for key in c_params:
        torch.testing.assert_close(n_params[key], c_params[key], rtol=1e-5, atol=1e-6)


def test_grad_scaler_kernels_run_on_neuron():
    torchneuron.reset_executed_ops()
    _scaler_run("neuron", inject_inf_at=None, steps=2)
    ops = torchneuron.executed_ops()
    assert ops.get("aten::_amp_foreach_non_finite_check_and_unscale_", 0) > 0, sorted(ops)
    assert ops.get("aten::_amp_update_scale_", 0) > 0, sorted(ops)


def test_torch_neuron_amp_grad_scaler_alias():
    scaler = torch.neuron.amp.GradScaler(init_scale=8.0)
    assert scaler._device == "neuron" and scaler.get_scale() == 8.0


def test_fused_adam_with_grad_scaler_unscales_inside_the_kernel():
    # fused optimizers take grad_scale/found_inf themselves; GradScaler must hand them over on neuron too.
    torch.manual_seed(0)
    results = {}
    for device in ("neuron", "cpu"):
        torch.manual_seed(0)
        model = MLP().to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, fused=True)
        scaler = torch.amp.GradScaler(device, init_scale=256.0)
        x, y = torch.randn(8, 32).to(device), torch.arange(8).to(device)
        for _ in range(3):
            opt.zero_grad()
            scaler.scale(F.cross_entropy(model(x), y)).backward()
            scaler.step(opt)
            scaler.update()
        results[device] = {n: p.detach().cpu() for n, p in model.named_parameters()}
    for key in results["cpu"]:
        torch.testing.assert_close(results["neuron"][key], results["cpu"][key], rtol=1e-5, atol=1e-6)
