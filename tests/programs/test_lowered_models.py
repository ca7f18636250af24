"""torchneuron.lower on whole models (forward, and backward graphs from AOTAutograd) matches CPU eager."""

import pytest
import torch
import torch.nn as nn

from torchneuron.programs.lowered import lower


def _close(a, b, atol=1e-5, rtol=1e-4):
    torch.testing.assert_close(a, b, atol=atol, rtol=rtol)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.net(x).softmax(-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv1(x)))
        x = torch.max_pool2d(x, 2)
        x = torch.relu(self.conv2(x))
        return self.fc(self.pool(x).flatten(1))


class Block(nn.Module):
    """A pre-norm transformer block: attention (SDPA with a causal mask) + MLP."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


@pytest.mark.parametrize("make,shape", [(MLP, (8, 16)), (CNN, (2, 3, 16, 16)), (Block, (2, 8, 32))],
                         ids=["mlp", "cnn", "transformer"])
def test_forward_matches_eager(make, shape):
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(shape)
    lowered = lower(model, x)
    assert "stablehlo." in lowered.stablehlo and "dense_resource" not in lowered.stablehlo
    # parameters are arguments of @main, not constants
    n_params = len(list(model.parameters())) + len(list(model.buffers()))
    assert len(lowered.param_names) == n_params
    assert lowered.stablehlo.count("%arg") >= n_params + 1
    with torch.no_grad():
        _close(lowered(x), model(x))
    # weights are read at call time: an update is seen without lowering again
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
        _close(lowered(x), model(x))


def _aot_graphs(model, x):
    from functorch.compile import aot_function, make_boxed_func

    graphs = {}

    def capture(kind):
        def compiler(gm, example_inputs):  # example_inputs are fake: record the real ones at run time
            def run(*args):
                graphs[kind] = (gm, [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args])
                return gm(*args)
            return make_boxed_func(run)
        return compiler

    params = {**dict(model.named_parameters()), **dict(model.named_buffers())}

    def step(params, x):
        return torch.func.functional_call(model, params, (x,)).square().mean()

    fn = aot_function(step, fw_compiler=capture("fw"), bw_compiler=capture("bw"))
    loss = fn(params, x)
    loss.backward()
    return graphs, loss


@pytest.mark.parametrize("make,shape", [(MLP, (8, 16)), (CNN, (2, 3, 16, 16)), (Block, (2, 8, 32))],
                         ids=["mlp", "cnn", "transformer"])
def test_aot_autograd_forward_and_backward_graphs(make, shape):
    torch.manual_seed(0)
    model = make()
    x = torch.randn(shape)
    graphs, _ = _aot_graphs(model, x)
    for kind in ("fw", "bw"):
        gm, example = graphs[kind]
        example = [e.detach() if isinstance(e, torch.Tensor) else e for e in example]
        lowered = lower(gm, *example)
        expected = gm(*example)
        got = lowered(*example)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            if e is None:
                assert g is None
            else:
                _close(g, e, atol=1e-4, rtol=1e-4)


def test_backward_gradients_match_autograd():
    """The lowered backward graph yields the same parameter gradients as eager autograd."""
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(8, 16)
    graphs, _ = _aot_graphs(model, x)
    gm, example = graphs["bw"]
    example = [e.detach() for e in example]
    grads = lower(gm, *example)(*example)
    model.zero_grad()
    torch.func.functional_call(model, dict(model.named_parameters()), (x,)).square().mean().backward()
    eager = [p.grad for p in model.parameters()]
    got = [g for g in grads if g is not None]
    assert len(got) == len(eager)
    for g, e in zip(got, eager):
        _close(g, e, atol=1e-5, rtol=1e-4)


def test_input_mutation_is_written_back():
    def f(x, y):
        x.add_(y)
        return x * 2

    x, y = torch.randn(5), torch.randn(5)
    x0 = x.clone()
    lowered = lower(f, x.clone(), y)
    out = lowered(x, y)
    _close(x, x0 + y)
    _close(out, (x0 + y) * 2)
