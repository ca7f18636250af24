import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's compile/nki_integration example, as a TorchNeuron user writes it: an NKI kernel (RMS normalisation,
# written against the Neuron SDK's ``neuronxcc.nki`` API) wrapped with torch_neuronx.wrap_nki, registered with
# torch_neuronx.nki_op, used inside a model compiled with torch.compile(backend="neuron",
# fullgraph=True) next to ordinary PyTorch ops, and trained through the op's registered backward. The
# results are checked against the same model in plain PyTorch on the CPU.
#
#     python compile_nki_integration.py
#
# Prints one JSON line: errors of the eager and compiled outputs and gradients, and the compile metrics.

import json

import torch
import torch.nn as nn

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from torch_neuronx import nki_op, wrap_nki

EPS = 1e-6


@wrap_nki
@nki.jit
def rms_normalize_kernel(x):
    """x * rsqrt(mean(x^2, -1) + eps) for x [rows <= 128, cols]."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    mean_sq = nl.mean(nl.square(t), axis=1, keepdims=True)
    nl.store(out, nl.multiply(t, nl.rsqrt(nl.add(mean_sq, EPS))))
    return out


@nki_op("nki_integration::rms_normalize")
def rms_normalize(x: torch.Tensor) -> torch.Tensor:
    return rms_normalize_kernel(x)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    r = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
    return grad * r - x * r.pow(3) * (grad * x).mean(-1, keepdim=True)


rms_normalize.register_autograd(_backward, setup_context=_setup)


class Block(nn.Module):
    def __init__(self, use_nki):
        super().__init__()
        self.use_nki = use_nki
        self.up, self.down = nn.Linear(64, 128), nn.Linear(128, 64)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 128))

    def forward(self, x):
        h = self.up(x)
        h = rms_normalize(h) if self.use_nki else h * (h.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        return self.down(torch.relu(h * self.scale))


def run(model, x):
    model.zero_grad()
    y = model(x)
    y.square().mean().backward()
    return [y.detach().cpu()] + [p.grad.cpu() for p in model.parameters()]


def err(a, b):
    return max((u - v).abs().max().item() for u, v in zip(a, b))


def main():
    torch.manual_seed(0)
    ref_model = Block(use_nki=False)
    model = Block(use_nki=True)
    model.load_state_dict(ref_model.state_dict())
    model.to("neuron")
    x = torch.randn(32, 64)
    want = run(ref_model, x)
    out = {"example": "compile/nki_integration"}
    out["eager_err"] = err(run(model, x.to("neuron")), want)
    torch_neuronx.reset_dynamo_metrics()
    compiled = torch.compile(model, backend="neuron", fullgraph=True)
    out["compiled_err"] = err(run(compiled, x.to("neuron")), want)
    out["compiled_again_err"] = err(run(compiled, x.to("neuron")), want)
    metrics = torch_neuronx.get_dynamo_metrics()
    out["dynamo_metrics"] = {k: metrics[k] for k in ("graphs_compiled", "recompiles", "lowered_pieces",
                                                     "eager_pieces")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
