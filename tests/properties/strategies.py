"""Hypothesis strategies: shapes, broadcastable shape pairs, dtypes, and tensors with arbitrary strides.

A tensor is built on the CPU and copied to neuron with the same sizes, strides and storage offset
(tests.conformance.harness.to_neuron_tensor), so both devices see the same layout: transposed, sliced with
steps, expanded (stride 0) or offset into a larger storage.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool]


def shapes(min_dims=0, max_dims=4, max_side=6):
    return st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def broadcastable_pair(draw, max_dims=4, max_side=5):
    out = draw(shapes(1, max_dims, max_side))
    def shrink(shape):
        dims = draw(st.integers(0, len(shape)))
        tail = shape[len(shape) - dims:]
        return tuple(1 if draw(st.booleans()) else s for s in tail)
    return shrink(out), shrink(out)


def _values(draw, shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        scale = draw(st.sampled_from([1.0, 100.0, 1e-3]))
        return (torch.randn(shape, generator=g) * scale).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, shape, generator=g, dtype=torch.int64).to(dtype)


@st.composite
def strided_tensor(draw, shape, dtype):
    """A CPU tensor of `shape` whose layout is drawn: contiguous, permuted, stepped, expanded or offset."""
    seed = draw(st.integers(0, 2**31 - 1))
    layout = draw(st.sampled_from(["contiguous", "permuted", "stepped", "expanded", "offset"]))
    if layout == "permuted" and len(shape) >= 2:
        perm = draw(st.permutations(range(len(shape))))
        base = _values(draw, tuple(shape[p] for p in perm), dtype, seed)
        inverse = sorted(range(len(perm)), key=lambda i: perm[i])
        return base.permute(inverse)
    if layout == "stepped" and len(shape) >= 1:
        big = tuple(s * 2 for s in shape)
        base = _values(draw, big, dtype, seed)
        return base[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "expanded" and len(shape) >= 1:
        dim = draw(st.integers(0, len(shape) - 1))
        small = list(shape)
        small[dim] = 1
        return _values(draw, tuple(small), dtype, seed).expand(shape)
    if layout == "offset":
        n = 1
        for s in shape:
            n *= s
        flat = _values(draw, (n + 3,), dtype, seed)
        return flat[3:].view(shape)
    return _values(draw, shape, dtype, seed)
