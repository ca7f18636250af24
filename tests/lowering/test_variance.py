"""var / std / var_mean / std_mean and the normalisations built on them lower without float64 tensors (NeuronCores
have none) and match the CPU to float32 accuracy, two-pass, even with a large mean."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron


def _f64_tensors(text: str) -> list[str]:
    # scalar literals (tensor<f64>, tensor<1xf64>) are converted on the spot; anything larger is arithmetic
    return [m for m in re.findall(r"tensor<([0-9x]*)f64>", text) if m not in ("", "1x")]


CASES = {
    "var": lambda x: x.var(-1),
    "std_unbiased0": lambda x: x.std(0, correction=0),
    "var_mean_keepdim": lambda x: torch.var_mean(x, -1, keepdim=True),
    "std_mean_all": lambda x: torch.std_mean(x),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "group_norm": lambda x: F.group_norm(x.reshape(x.shape[0], 2, -1), 2),
    "batch_norm_train": lambda x: F.batch_norm(x, None, None, training=True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_no_float64_and_cpu_values(name):
    fn = CASES[name]
    x = torch.randn(6, 8) * 3 + 1000  # a large mean: one-pass E[x²] - E[x]² in float32 would lose it all
    lowered = torchneuron.lower(fn, x)
    assert _f64_tensors(lowered.stablehlo) == []
    got, want = lowered(x), fn(x)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), dim=st.integers(0, 2),
       correction=st.sampled_from([0, 1, 2]), dtype=st.sampled_from([torch.float32, torch.bfloat16]))
def test_var_mean_matches_cpu(shape, dim, correction, dtype):
    x = torch.randn(shape).to(dtype)
    dim = dim % len(shape)

    def fn(t):
        return torch.var_mean(t, dim, correction=correction)

    got, want = torchneuron.lower(fn, x)(x), fn(x)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True)  # n <= correction: inf/nan as on CPU
