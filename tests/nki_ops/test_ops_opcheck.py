"""Every op of the kernel library passes torch.library.opcheck (schema, fake tensor, AOT dispatch, autograd
registration), forward and backward ops alike."""

from __future__ import annotations

import math

import pytest
import torch

import nki_ops.torch_ops  # noqa: F401  (registers torch.ops.nki_ops.*)
from tests.custom_ops.opcheck import opcheck

N = torch.ops.nki_ops


def _t(*shape, grad=False, positive=False, seed=0):
    t = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    t = t.abs() + 0.1 if positive else t
    return t.to("neuron").requires_grad_(grad)


def _cases():
    x, w, b = _t(3, 50, 40, grad=True), _t(40, grad=True), _t(40, grad=True, seed=1)
    rows = _t(150, 40, seed=2)
    q, k, v = (_t(2, 3, 20, 8, grad=True, seed=s) for s in (3, 4, 5))
    q3, k3, v3 = (_t(6, 20, 8, seed=s) for s in (3, 4, 5))
    ang = torch.randn(20, 4, generator=torch.Generator().manual_seed(6))
    cos, sin = (torch.cat([ang, ang], -1).cos().to("neuron"), torch.cat([ang, ang], -1).sin().to("neuron"))
    wl, bl = _t(24, 40, grad=True, seed=7), _t(24, grad=True, seed=8)
    out, lse = N.causal_attention(q3, k3, v3, 1 / math.sqrt(8))
    return {
        "rmsnorm_fwd": (N.rmsnorm_fwd, (x, w, 1e-6)),
        "rmsnorm_backward": (N.rmsnorm_backward, (rows, rows, w.detach(), _t(150, 1, positive=True))),
        "layernorm_fwd": (N.layernorm_fwd, (x, w, b, 1e-5)),
        "layernorm_backward": (N.layernorm_backward, (rows, rows, w.detach(), _t(150, 1), _t(150, 1, positive=True))),
        "softmax": (N.softmax, (x,)),
        "softmax_backward": (N.softmax_backward, (rows, torch.softmax(rows, -1))),
        "linear": (N.linear, (x, wl, bl)),
        "linear_nobias": (N.linear, (x, wl, None)),
        "linear_act": (N.linear_act, (x, wl, bl, "gelu_tanh")),
        "linear_backward": (N.linear_backward, (_t(150, 24), rows, wl.detach(), True)),
        "activation_backward": (N.activation_backward, (rows, rows * 2, "silu")),
        "matmul": (N.matmul, (_t(30, 40, grad=True), _t(40, 20, grad=True))),
        "matmul_backward": (N.matmul_backward, (_t(30, 20), _t(30, 40), _t(40, 20))),
        "causal_attention": (N.causal_attention, (q.reshape(6, 20, 8), k.reshape(6, 20, 8), v.reshape(6, 20, 8),
                                                  1 / math.sqrt(8))),
        "causal_attention_backward": (N.causal_attention_backward, (q3, k3, v3, out, _t(6, 20, 8), lse, 0.35)),
        "rotary": (N.rotary, (q, cos, sin)),
        "rotary_backward": (N.rotary_backward, (q.detach(), cos, sin)),
        "adamw_": (N.adamw_, ([_t(70), _t(3, 5)], [_t(70, seed=1), _t(3, 5, seed=1)], [_t(70), _t(3, 5)],
                              [_t(70, positive=True), _t(3, 5, positive=True)], 1e-3, 0.9, 0.999, 1e-8, 0.01, 3)),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_opcheck(name):
    op, args = CASES[name]
    opcheck(op.default, args)


def test_every_registered_op_is_checked():
    from torchneuron.custom_ops import registry

    ours = {n.split("::")[1] for n in registry.names() if n.startswith("nki_ops::")}
    assert ours == {name.removesuffix("_nobias") for name in CASES}
