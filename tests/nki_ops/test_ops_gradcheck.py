"""gradcheck for every op with a backward.

NeuronCores have no float64 (and NKI kernels none at all), so the kernels are gradchecked in float32 on the
device: the full Jacobian by finite differences (eps=1e-2) against the registered NKI backward, at a tolerance
(1e-2) that fp32 rounding and the O(eps^2) truncation stay well inside but a wrong backward does not (the
negative control below registers a backward that is off by 5 % and must fail).

The math itself is pinned in float64: each op's backward on the device is compared with float64 autograd of the
torch reference on the CPU.
"""

from __future__ import annotations

import pytest
import torch
from torch.autograd.gradcheck import GradcheckError

import nki_ops.torch_ops as ops
import torchneuron
from nki_ops.torch_ops import attention_ops, linear_ops, norm_ops, rotary_ops, softmax_ops
from tests.custom_ops import kernels

GRADCHECK = {"eps": 1e-2, "atol": 1e-2, "rtol": 1e-2}


def _t(*shape, seed=0, device="neuron"):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device).requires_grad_()


_ang = torch.randn(6, 4, generator=torch.Generator().manual_seed(7))
_cos, _sin = torch.cat([_ang, _ang], -1).cos(), torch.cat([_ang, _ang], -1).sin()

# name: (op on neuron tensors, torch reference, input shapes)
CASES = {
    "rmsnorm": (lambda x, w: ops.rmsnorm(x, w, 1e-6), lambda x, w: norm_ops.reference_rmsnorm(x, w, 1e-6),
                [(5, 12), (12,)]),
    "layernorm": (ops.layernorm, norm_ops.reference_layernorm, [(5, 12), (12,), (12,)]),
    "softmax": (ops.softmax, softmax_ops.reference_softmax, [(5, 12)]),
    "linear": (ops.linear, linear_ops.reference_linear, [(5, 12), (7, 12), (7,)]),
    "linear_gelu_tanh": (lambda x, w, b: ops.linear(x, w, b, "gelu_tanh"),
                         lambda x, w, b: linear_ops.reference_linear(x, w, b, "gelu_tanh"), [(5, 12), (7, 12), (7,)]),
    "linear_silu": (lambda x, w, b: ops.linear(x, w, b, "silu"),
                    lambda x, w, b: linear_ops.reference_linear(x, w, b, "silu"), [(5, 12), (7, 12), (7,)]),
    "matmul": (ops.matmul, torch.matmul, [(5, 12), (12, 7)]),
    "causal_attention": (lambda q, k, v: ops.causal_attention(q, k, v, 0.7),
                         lambda q, k, v: attention_ops.reference_causal_attention(q, k, v, 0.7), [(1, 5, 4)] * 3),
    "rotary": (lambda x: ops.rotary(x, _cos.to("neuron"), _sin.to("neuron")),
               lambda x: rotary_ops.reference_rotary(x, _cos.to(x.dtype), _sin.to(x.dtype)), [(2, 6, 8)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_fp32_on_the_device(name):
    fn, _, shapes = CASES[name]
    inputs = tuple(_t(*s, seed=i) for i, s in enumerate(shapes))
    assert torch.autograd.gradcheck(fn, inputs, **GRADCHECK)


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_matches_float64_autograd_of_the_reference(name):
    fn, ref, shapes = CASES[name]
    dev = [_t(*s, seed=i) for i, s in enumerate(shapes)]
    cpu = [t.detach().cpu().double().requires_grad_() for t in dev]
    # the reference math itself, in float64
    torch.autograd.gradcheck(ref, tuple(cpu), eps=1e-6, atol=1e-7, fast_mode=True)
    y, yr = fn(*dev), ref(*cpu)
    g = torch.randn(yr.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    y.backward(g.float().to("neuron"))
    yr.backward(g)
    for a, b in zip(dev, cpu):
        torch.testing.assert_close(a.grad.cpu().double(), b.grad, rtol=1e-4, atol=1e-5)


@torchneuron.nki_op("tn_gradcheck::double_wrong_grad", mutates_args=())
def _double(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    kernels.scale_into(x, out)
    return out


_double.register_autograd(lambda ctx, g: _double(g) * 1.05, setup_context=lambda ctx, inputs, output: None)


def test_negative_control_a_wrong_backward_fails_these_tolerances():
    with pytest.raises(GradcheckError):
        torch.autograd.gradcheck(_double, (_t(5, 12),), **GRADCHECK)

