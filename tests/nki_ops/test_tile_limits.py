"""The documented limits of the kernels (docs/nki_ops.md) raise the documented NKI errors, just past the limit,
and work just inside it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import nki_ops.torch_ops as ops
from torchneuron.nki import NkiError


def _z(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype, device="neuron")


def _meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")  # the limits are shapes: checked shape-only, fast


@settings(settings.get_profile("nki_ops"))
@given(d=st.integers(129, 512), seq=st.sampled_from([16, 200]))
def test_attention_head_dim_over_128(d, seq):
    q = _meta(2, seq, d)
    with pytest.raises(NkiError) as info:
        ops.causal_attention(q, q, q)
    assert info.value.code == "err_num_partition_exceed_arch_limit"


def test_attention_head_dim_128_works():
    q = torch.randn(1, 20, 128, device="neuron")
    assert ops.causal_attention(q, q, q).shape == (1, 20, 128)


# per-row kernels keep a row on chip: the widest fp32 rows that fit trn2's SBUF (212984 bytes per partition)
ROW_LIMITS = {"softmax": 17_000, "rmsnorm": 13_000, "layernorm": 8_000}


def _row_op(name, x):
    w = _meta(x.shape[-1])
    return {"softmax": lambda: ops.softmax(x), "rmsnorm": lambda: ops.rmsnorm(x, w),
            "layernorm": lambda: ops.layernorm(x, w, w)}[name]()


@pytest.mark.parametrize("name", sorted(ROW_LIMITS))
def test_rows_longer_than_sbuf_allows(name):
    with pytest.raises(NkiError) as info:
        _row_op(name, _meta(4, 60_000))
    assert info.value.code == "err_sbuf_capacity_exceeded"
    assert _row_op(name, _meta(4, ROW_LIMITS[name])).shape == (4, ROW_LIMITS[name])


@pytest.mark.parametrize("name, limit", [("rmsnorm", 4096), ("layernorm", 2048)])
def test_backward_column_sums_fit_psum_or_spill_to_sbuf(name, limit):
    """The weight-gradient sums stay in PSUM up to `limit` columns and go through SBUF beyond: both correct."""
    for cols in (limit, limit + 512):
        x = torch.randn(3, cols, device="neuron", requires_grad=True)
        w = torch.randn(cols, device="neuron", requires_grad=True)
        y = ops.rmsnorm(x, w) if name == "rmsnorm" else ops.layernorm(x, w, w)
        y.sum().backward()
        xc, wc = x.detach().cpu().requires_grad_(), w.detach().cpu().requires_grad_()
        ref = (torch.nn.functional.rms_norm(xc, (cols,), wc, 1e-6) if name == "rmsnorm"
               else torch.nn.functional.layer_norm(xc, (cols,), wc, wc))
        ref.sum().backward()
        torch.testing.assert_close(w.grad.cpu(), wc.grad, rtol=1e-4, atol=1e-3)


def test_rotary_needs_an_even_head_dim():
    with pytest.raises(ValueError, match="head dim must be even"):
        ops.rotary(_z(1, 4, 5), _z(4, 5), _z(4, 5))


def test_matmul_refuses_mixed_dtypes_like_the_tensor_engine():
    with pytest.raises(TypeError, match="share one dtype.*a: torch.float32, b: torch.bfloat16"):
        ops.matmul(_z(4, 4), _z(4, 4, dtype=torch.bfloat16))


def test_linear_checks_feature_counts():
    with pytest.raises(ValueError, match="x has 5 features but weight \\(3, 4\\) expects 4"):
        ops.linear(_z(2, 5), _z(3, 4))
