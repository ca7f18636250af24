"""End-to-end training, written as a user's script: build on the CPU, .to(device), train, compare.

The same seed, initial weights and batches train on neuron and on the CPU; losses and parameters must agree
within float32 tolerance. Dropout draws from each device's own generator; torch.manual_seed seeds both, and
the neuron generator is the same Mersenne-Twister stream, so the agreement check runs with dropout on too.
Dropout's statistics and per-seed determinism on neuron are checked separately below.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torchneuron.testing.models import CNN, GPT, MLP

RTOL, ATOL = 1e-4, 1e-5  # float32, after several optimizer steps
# Measured: all three models train bit-identically to the CPU (same kernels, SDPA's flash kernel, backward on
# the calling thread). The float32 tolerance leaves room for TORCHNEURON_BACKWARD_THREAD=device, whose
# single-threaded backward reduces in another order.
PARAM_TOL = {"mlp": (RTOL, ATOL), "cnn": (RTOL, ATOL), "gpt": (RTOL, ATOL)}  # measured: all bit-identical


def batches(kind: str, steps: int, seed: int = 0):
    """Two fixed batches, alternated: a model that trains must lower its loss on them."""
    g = torch.Generator().manual_seed(seed)
    data = list(_make_batches(kind, 2, g))
    for i in range(steps):
        yield data[i % 2]


def _make_batches(kind: str, n: int, g: torch.Generator):
    for _ in range(n):
        if kind == "mlp":
            yield torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g)
        elif kind == "cnn":
            yield torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)
        else:
            tokens = torch.randint(0, 64, (4, 17), generator=g)
            yield tokens[:, :-1], tokens[:, 1:]


def train(kind: str, device: str, steps: int = 6, dropout: float = 0.0, seed: int = 0):
    torch.manual_seed(seed)
    model = {"mlp": MLP, "cnn": CNN, "gpt": GPT}[kind](dropout=dropout).to(device)
    if kind == "gpt":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    elif kind == "cnn":
        opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    torch.manual_seed(seed + 1)  # the dropout stream, on whichever device trains
    losses = []
    model.train()
    for x, y in batches(kind, steps, seed):
        x, y = x.to(device), y.to(device)
        opt.zero_grad(set_to_none=True)
        if kind == "gpt":
            _, loss = model(x, y)
        else:
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        if kind == "gpt":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    params = {n: p.detach().cpu() for n, p in model.named_parameters()}
    buffers = {n: b.detach().cpu() for n, b in model.named_buffers()}
    return losses, params, buffers, model


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_training_matches_cpu(kind):
    n_losses, n_params, n_buffers, model = train(kind, "neuron")
    c_losses, c_params, c_buffers, _ = train(kind, "cpu")
    assert all(p.device.type == "neuron" for p in model.parameters())
    assert n_losses[-1] < n_losses[0], f"{kind} did not learn on neuron: {n_losses}"
    torch.testing.assert_close(torch.tensor(n_losses), torch.tensor(c_losses), rtol=RTOL, atol=ATOL)
    assert n_params.keys() == c_params.keys()
    rtol, atol = PARAM_TOL[kind]
    for name in n_params:
        torch.testing.assert_close(n_params[name], c_params[name], rtol=rtol, atol=atol, msg=lambda m: f"{name}: {m}")
    for name in n_buffers:  # batch-norm running statistics
        torch.testing.assert_close(n_buffers[name], c_buffers[name], rtol=RTOL, atol=ATOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_training_with_dropout_matches_cpu_per_seed(kind):
    n_losses, n_params, _, _ = train(kind, "neuron", steps=4, dropout=0.2)
    c_losses, c_params, _, _ = train(kind, "cpu", steps=4, dropout=0.2)
    torch.testing.assert_close(torch.tensor(n_losses), torch.tensor(c_losses), rtol=RTOL, atol=ATOL)
    rtol, atol = PARAM_TOL[kind]
    for name in n_params:
        torch.testing.assert_close(n_params[name], c_params[name], rtol=rtol, atol=atol)


def test_module_to_neuron_keeps_tied_weights():
    # GPT ties the embedding to the output head; Module.to() must keep one Parameter (as on CUDA), which
    # needs torch._has_compatible_shallow_copy_type(cpu, neuron) to be True.
    model = GPT().to("neuron")
    assert model.head.weight is model.tok.weight
    assert len(list(model.parameters())) == len(list(GPT().parameters()))


def test_dropout_is_deterministic_per_seed_and_differs_across_seeds():
    a, _, _, _ = train("mlp", "neuron", steps=3, dropout=0.3, seed=5)
    b, _, _, _ = train("mlp", "neuron", steps=3, dropout=0.3, seed=5)
    c, _, _, _ = train("mlp", "neuron", steps=3, dropout=0.3, seed=6)
    assert a == b
    assert a != c


def test_dropout_statistics_on_neuron():
    torch.manual_seed(0)
    x = torch.ones(200_000, device="neuron")
    for p in (0.1, 0.5, 0.8):
        y = F.dropout(x, p=p, training=True)
        assert y.device.type == "neuron"
        kept = y != 0
        frac_dropped = 1.0 - kept.float().mean().item()
        assert abs(frac_dropped - p) < 0.01, (p, frac_dropped)
        torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1.0 / (1.0 - p)))
    assert torch.equal(F.dropout(x, p=0.5, training=False), x)


def test_neuron_generator_is_independent_of_the_cpu_generator():
    torch.neuron.manual_seed(3)
    a = torch.rand(5, device="neuron").cpu()
    torch.neuron.manual_seed(3)
    torch.rand(100)  # draws on the CPU generator must not shift the neuron stream
    b = torch.rand(5, device="neuron").cpu()
    assert torch.equal(a, b)


def test_eval_mode_inference_matches_cpu():
    torch.manual_seed(0)
    model = CNN(dropout=0.5)
    x = torch.randn(4, 3, 16, 16)
    model.train()
    model(x)  # update batch-norm statistics once
    model.eval()
    expected = model(x)
    with torch.no_grad():
        actual = model.to("neuron")(x.to("neuron"))
    torch.testing.assert_close(actual.cpu(), expected.detach(), rtol=RTOL, atol=ATOL)
