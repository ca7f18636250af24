"""Forward and backward of every op against its torch reference on the CPU, over hypothesis-drawn shapes
(row counts and widths that are not multiples of 128 included), in float32 and bfloat16."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import nki_ops.torch_ops as ops
from nki_ops.torch_ops import attention_ops, linear_ops, norm_ops, rotary_ops, softmax_ops

DTYPES = st.sampled_from([torch.float32, torch.bfloat16])
TOL = {torch.float32: 1e-4, torch.bfloat16: 3e-2}  # bf16: a few roundings of 2^-8 each


def close(got, ref, dtype, scale):
    """Within the dtype's tolerance, absolute part relative to the result's magnitude (sums of many bf16
    products are not small-relative-error near zero)."""
    tol = TOL[dtype] * scale
    torch.testing.assert_close(got.cpu().float(), ref.to(dtype).float(), rtol=tol,
                               atol=tol * max(1.0, float(ref.detach().abs().max())))


def _inputs(seed, dtype, *shapes):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g).to(dtype) for s in shapes]


def check(fn, ref, dtype, *cpu_inputs, grads=True, scale=1.0):
    """fn on neuron vs ref on the CPU (in float32 for bf16 inputs, rounded back): outputs and input gradients."""
    dev = [t.to("neuron").requires_grad_(grads) for t in cpu_inputs]
    cpu = [t.float().requires_grad_(grads) for t in cpu_inputs]
    y, yr = fn(*dev), ref(*cpu)
    assert y.dtype == dtype and y.shape == yr.shape
    close(y, yr, dtype, scale)
    if not grads:
        return
    g = torch.randn(yr.shape, generator=torch.Generator().manual_seed(99)).to(dtype)
    y.backward(g.to("neuron"))
    yr.backward(g.float())
    for a, b in zip(dev, cpu):
        assert a.grad.dtype == dtype
        close(a.grad, b.grad, dtype, scale)


@settings(settings.get_profile("nki_ops"))
@given(rows=st.integers(1, 300), cols=st.integers(1, 700), dtype=DTYPES, seed=st.integers(0, 99))
def test_rmsnorm(rows, cols, dtype, seed):
    x, w = _inputs(seed, dtype, (rows, cols), (cols,))
    check(lambda x, w: ops.rmsnorm(x, w, 1e-6), lambda x, w: norm_ops.reference_rmsnorm(x, w, 1e-6), dtype, x, w,
          scale=2.0)


@settings(settings.get_profile("nki_ops"))
@given(rows=st.integers(1, 300), cols=st.integers(2, 700), dtype=DTYPES, seed=st.integers(0, 99))
def test_layernorm(rows, cols, dtype, seed):
    x, w, b = _inputs(seed, dtype, (rows, cols), (cols,), (cols,))
    check(ops.layernorm, norm_ops.reference_layernorm, dtype, x, w, b, scale=2.0)


@settings(settings.get_profile("nki_ops"))
@given(rows=st.integers(1, 300), cols=st.integers(1, 700), dtype=DTYPES, seed=st.integers(0, 99))
def test_softmax(rows, cols, dtype, seed):
    (x,) = _inputs(seed, dtype, (rows, cols))
    check(ops.softmax, softmax_ops.reference_softmax, dtype, x * 3)


@settings(settings.get_profile("nki_ops"))
@given(m=st.integers(1, 260), k=st.integers(1, 300), n=st.integers(1, 600), bias=st.booleans(),
       act=st.sampled_from(["none", "relu", "gelu", "gelu_tanh", "silu"]), dtype=DTYPES, seed=st.integers(0, 99))
def test_linear(m, k, n, bias, act, dtype, seed):
    x, w, b = _inputs(seed, dtype, (m, k), (n, k), (n,))
    w = w / math.sqrt(k)
    if bias:
        check(lambda x, w, b: ops.linear(x, w, b, act), lambda x, w, b: linear_ops.reference_linear(x, w, b, act),
              dtype, x, w, b, scale=2.0)
    else:
        check(lambda x, w: ops.linear(x, w, None, act), lambda x, w: linear_ops.reference_linear(x, w, None, act),
              dtype, x, w, scale=2.0)


@settings(settings.get_profile("nki_ops"))
@given(m=st.integers(1, 200), k=st.integers(1, 300), n=st.integers(1, 300), dtype=DTYPES, seed=st.integers(0, 99))
def test_matmul(m, k, n, dtype, seed):
    a, b = _inputs(seed, dtype, (m, k), (k, n))
    check(ops.matmul, torch.matmul, dtype, a, b / math.sqrt(k), scale=2.0)


@settings(settings.get_profile("nki_ops"))
@given(batch=st.integers(1, 3), heads=st.integers(1, 4), seq=st.sampled_from([1, 7, 16, 64, 100, 128, 200]),
       d=st.sampled_from([4, 8, 32, 64, 128]), dtype=DTYPES, seed=st.integers(0, 99))
def test_causal_attention(batch, heads, seq, d, dtype, seed):
    q, k, v = _inputs(seed, dtype, *([(batch, heads, seq, d)] * 3))
    check(ops.causal_attention, attention_ops.reference_causal_attention, dtype, q, k, v, scale=2.0)


@settings(settings.get_profile("nki_ops"))
@given(heads=st.integers(1, 40), seq=st.integers(1, 200), half=st.integers(1, 64), dtype=DTYPES,
       seed=st.integers(0, 99))
def test_rotary(heads, seq, half, dtype, seed):
    (x,) = _inputs(seed, dtype, (heads, seq, 2 * half))
    ang = torch.randn(seq, half, generator=torch.Generator().manual_seed(seed))
    cos, sin = torch.cat([ang, ang], -1).cos().to(dtype), torch.cat([ang, ang], -1).sin().to(dtype)
    dev = [cos.to("neuron"), sin.to("neuron")]
    check(lambda x: ops.rotary(x, *dev), lambda x: rotary_ops.reference_rotary(x, cos.float(), sin.float()), dtype, x)


def test_attention_scale_argument():
    q, k, v = _inputs(0, torch.float32, *([(2, 30, 16)] * 3))
    check(lambda q, k, v: ops.causal_attention(q, k, v, 0.1),
          lambda q, k, v: attention_ops.reference_causal_attention(q, k, v, 0.1), torch.float32, q, k, v)


@pytest.mark.slow
@settings(settings.get_profile("nki_ops"), max_examples=40)
@given(batch=st.integers(1, 2), heads=st.integers(1, 3), seq=st.integers(129, 520), d=st.sampled_from([16, 64, 128]),
       dtype=DTYPES, seed=st.integers(0, 99))
def test_causal_attention_long_sequences(batch, heads, seq, d, dtype, seed):
    q, k, v = _inputs(seed, dtype, *([(batch, heads, seq, d)] * 3))
    check(ops.causal_attention, attention_ops.reference_causal_attention, dtype, q, k, v, scale=2.0)
