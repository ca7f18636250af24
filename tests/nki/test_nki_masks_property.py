"""Property: legacy ISA calls under `mask=`, on strided views, assigned into views of declared tiles, equal
the NumPy reference: masked-off elements of the destination keep what they held, nothing else changes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl

P, F = 64, 48

# (name, kernel-side call on an SBUF view `x`, NumPy reference on fp32 `x`)
UNARY = {
    "activation_exp": (lambda x, m: nisa.activation(op=nl.exp, data=x, mask=m), np.exp),
    "tensor_scalar": (lambda x, m: nisa.tensor_scalar(x, np.multiply, 3.0, op1=np.add, operand1=-1.0, mask=m),
                      lambda x: x * 3.0 - 1.0),
    "tensor_copy": (lambda x, m: nisa.tensor_copy(x, mask=m), lambda x: x),
    "reciprocal": (lambda x, m: nisa.reciprocal(x, mask=m), lambda x: 1.0 / x),
    "nl_sigmoid": (lambda x, m: nl.sigmoid(x, mask=m), lambda x: 1.0 / (1.0 + np.exp(-x))),
    "tensor_tensor": (lambda x, m: nisa.tensor_tensor(x, x, np.maximum, mask=m), lambda x: x),
    "nl_add_scalar": (lambda x, m: nl.add(x, 2.5, mask=m), lambda x: x + 2.5),
}


@st.composite
def views(draw):
    """A strided view of a (P, 2F) tile: a partition window, and a free-dim window with a step."""
    p0 = draw(st.sampled_from([0, 32]))
    p = draw(st.integers(1, 32))
    step = draw(st.integers(1, 2))
    f = draw(st.integers(1, F // step))
    f0 = draw(st.integers(0, 2 * F - f * step))
    return p0, p, f0, f, step


@settings(max_examples=40)
@given(op=st.sampled_from(sorted(UNARY)), view=views(), threshold=st.integers(0, 40), axis=st.booleans(),
       seed=st.integers(0, 999))
def test_masked_results_assigned_into_strided_views(op, view, threshold: int, axis: bool, seed: int) -> None:
    call, ref = UNARY[op]
    p0, p, f0, f, step = view
    rng = np.random.default_rng(seed)
    src = rng.uniform(0.5, 2.0, (P, 2 * F)).astype(np.float32)
    base = rng.uniform(-1, 1, (P, 2 * F)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(b.shape, b.dtype, buffer=nl.shared_hbm)
        x, dst = nl.load(a), nl.load(b)
        i_p, i_f = nl.mgrid[0:p, 0:f]
        predicate = (i_f < threshold) if axis else (i_p < threshold)
        dst[p0 + i_p, f0 + step * i_f] = call(x[p0 + i_p, f0 + step * i_f], predicate)
        nl.store(out, dst)
        return out

    got = k(src, base)
    want = base.copy()
    ii, jj = np.mgrid[0:p, 0:f]
    keep = (jj < threshold) if axis else (ii < threshold)
    region = want[p0:p0 + p, f0:f0 + f * step:step]
    region[keep] = ref(src[p0:p0 + p, f0:f0 + f * step:step])[keep]
    want[p0:p0 + p, f0:f0 + f * step:step] = region
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@settings(max_examples=25)
@given(p=st.integers(8, 64), f=st.integers(8, 96), cut=st.integers(0, 96), seed=st.integers(0, 999))
def test_masked_reductions_take_only_masked_elements(p: int, f: int, cut: int, seed: int) -> None:
    x = np.random.default_rng(seed).uniform(-3, 3, (p, f)).astype(np.float32)

    @nki.jit
    def k(a):
        total = nl.ndarray((p, 1), nl.float32, buffer=nl.shared_hbm)
        top = nl.ndarray((p, 8), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        i_p, i_f = nl.mgrid[0:p, 0:f]
        nl.store(total, nisa.tensor_reduce(np.add, t, axis=[1], keepdims=True, mask=(i_f < cut)))
        nl.store(top, nisa.max8(src=t, mask=(i_f >= cut - 8)))
        return total, top

    total, top = k(x)
    np.testing.assert_allclose(total[:, 0], x[:, :cut].sum(axis=1), rtol=1e-5, atol=1e-5)
    candidates = x[:, max(cut - 8, 0):]
    want = -np.sort(-np.pad(candidates, ((0, 0), (0, max(0, 8 - candidates.shape[1]))), constant_values=-np.inf),
                    axis=1)[:, :8]
    np.testing.assert_array_equal(top, want)
