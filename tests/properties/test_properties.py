"""Property tests: for drawn shapes, strides, dtypes and broadcasts, neuron gives the CPU's answer.

Elementwise ops, reductions, matmul and indexing/scatter/gather. Results must be equal (float32 and
narrower floats run the same host kernels, so bit-equality is the expectation; a tolerance is allowed only
where noted) and must live on neuron with the CPU's dtype and shape.
"""

from __future__ import annotations

import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.conformance.harness import to_neuron_tensor
from tests.properties.strategies import (
    ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, broadcastable_pair, shapes, strided_tensor,
)


def same(neuron_result, cpu_result):
    assert neuron_result.device.type == "neuron"
    assert neuron_result.dtype == cpu_result.dtype and neuron_result.shape == cpu_result.shape
    torch.testing.assert_close(neuron_result.cpu(), cpu_result, rtol=0, atol=0, equal_nan=True)


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
    "eq": torch.eq, "lt": torch.lt, "where_gt": lambda a, b: torch.where(a > b, a, b),
}
FLOAT_BINARY = {"div": torch.div, "atan2": torch.atan2, "pow_abs": lambda a, b: torch.pow(a.abs(), b)}
UNARY = {"neg": torch.neg, "abs": torch.abs, "sign": torch.sign}
FLOAT_UNARY = {"exp": torch.exp, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "sqrt_abs": lambda x: x.abs().sqrt(),
               "gelu": torch.nn.functional.gelu, "reciprocal": torch.reciprocal}


@given(data=st.data(), pair=broadcastable_pair(), dtype=st.sampled_from(FLOAT_DTYPES + INT_DTYPES),
       op=st.sampled_from(sorted(BINARY) + sorted(FLOAT_BINARY)))
def test_binary_elementwise_with_broadcasting(data, pair, dtype, op):
    assume(op in BINARY or dtype.is_floating_point)
    fn = BINARY.get(op) or FLOAT_BINARY[op]
    a = data.draw(strided_tensor(pair[0], dtype))
    b = data.draw(strided_tensor(pair[1], dtype))
    same(fn(to_neuron_tensor(a), to_neuron_tensor(b)), fn(a, b))


@given(data=st.data(), shape=shapes(), dtype=st.sampled_from(FLOAT_DTYPES + INT_DTYPES),
       op=st.sampled_from(sorted(UNARY) + sorted(FLOAT_UNARY)))
def test_unary_elementwise(data, shape, dtype, op):
    assume(op in UNARY or dtype.is_floating_point)
    assume(not (op == "abs" and dtype == torch.uint8) and not (op == "neg" and dtype == torch.uint8))
    fn = UNARY.get(op) or FLOAT_UNARY[op]
    x = data.draw(strided_tensor(shape, dtype))
    same(fn(to_neuron_tensor(x)), fn(x))


@given(data=st.data(), shape=shapes(1, 4), dtype=st.sampled_from(FLOAT_DTYPES + INT_DTYPES),
       a=st.sampled_from(["add_", "mul_", "clamp_"]))
def test_in_place_on_strided_inputs_writes_through_the_view(data, shape, dtype, a):
    x = data.draw(strided_tensor(shape, dtype))
    assume(x.numel() == 0 or torch._debug_has_internal_overlap(x) == 0)  # in-place on expanded tensors errors
    n = to_neuron_tensor(x)
    base = n._base if n._base is not None else n
    fn = {"add_": lambda t: t.add_(3), "mul_": lambda t: t.mul_(2), "clamp_": lambda t: t.clamp_(-5, 5)}[a]
    ptr = n.data_ptr()
    fn(n), fn(x)
    assert n.data_ptr() == ptr
    same(n, x)
    assert base.device.type == "neuron"


REDUCTIONS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k), "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k), "prod": lambda x, d, k: x.prod(d[0], keepdim=k),
    "argmax": lambda x, d, k: x.argmax(d[0], keepdim=k), "any": lambda x, d, k: x.any(d[0], keepdim=k),
    "cumsum": lambda x, d, k: x.cumsum(d[0]),
}
FLOAT_REDUCTIONS = {"mean": lambda x, d, k: x.mean(d, keepdim=k), "std": lambda x, d, k: x.std(d, keepdim=k),
                    "logsumexp": lambda x, d, k: x.logsumexp(d, keepdim=k),
                    "norm": lambda x, d, k: torch.linalg.vector_norm(x, dim=d, keepdim=k)}


@given(data=st.data(), shape=shapes(1, 4), dtype=st.sampled_from(FLOAT_DTYPES + INT_DTYPES),
       op=st.sampled_from(sorted(REDUCTIONS) + sorted(FLOAT_REDUCTIONS)), keepdim=st.booleans())
def test_reductions_over_drawn_dims(data, shape, dtype, op, keepdim):
    assume(op in REDUCTIONS or dtype.is_floating_point)
    x = data.draw(strided_tensor(shape, dtype))
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    if op in ("amax", "amin", "argmax") and any(shape[d] == 0 for d in dims):
        assume(False)  # reducing an empty dim without identity errors on both; checked in test_errors-style tests
    fn = REDUCTIONS.get(op) or FLOAT_REDUCTIONS[op]
    want = fn(x, dims, keepdim)
    same(fn(to_neuron_tensor(x), dims, keepdim), want)


@given(data=st.data(), m=st.integers(0, 9), k=st.integers(0, 9), n=st.integers(0, 9),
       batch=st.sampled_from([(), (3,), (2, 1), (1, 2)]), batch_b=st.sampled_from([(), (1,), (2,)]),
       dtype=st.sampled_from(FLOAT_DTYPES + [torch.int64]))
def test_matmul_with_broadcast_batches(data, m, k, n, batch, batch_b, dtype):
    try:
        torch.broadcast_shapes(batch, batch_b)
    except RuntimeError:
        assume(False)  # e.g. (3,) against (2,): not a broadcastable pair, on any device
    a = data.draw(strided_tensor(batch + (m, k), dtype))
    b = data.draw(strided_tensor(batch_b + (k, n), dtype))
    want = a @ b
    same(to_neuron_tensor(a) @ to_neuron_tensor(b), want)


@given(data=st.data(), shape=shapes(1, 3, 6), dtype=st.sampled_from(ALL_DTYPES), nidx=st.integers(0, 8))
def test_advanced_indexing_and_index_put(data, shape, dtype, nidx):
    assume(shape[0] > 0)
    x = data.draw(strided_tensor(shape, dtype))
    idx = torch.tensor(data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=nidx, max_size=nidx)),
                       dtype=torch.int64)
    n, ni = to_neuron_tensor(x), idx.to("neuron")
    same(n[ni], x[idx])
    same(n[idx], x[idx])  # host indices are allowed with neuron tensors, as on CUDA
    mask = x != x.flatten()[0] if x.numel() else torch.zeros(shape, dtype=torch.bool)
    same(n[mask.to("neuron")], x[mask])
    values = data.draw(strided_tensor((nidx,) + tuple(shape[1:]), dtype))
    accumulate = dtype != torch.bool and data.draw(st.booleans())
    xc = x.clone()
    nc = to_neuron_tensor(x).clone()
    unique = len(set(i % shape[0] for i in idx.tolist())) == nidx
    assume(accumulate or unique)  # duplicate indices without accumulate leave an unspecified winner
    xc.index_put_((idx,), values, accumulate=accumulate)
    nc.index_put_((ni,), to_neuron_tensor(values), accumulate=accumulate)
    same(nc, xc)


@given(data=st.data(), shape=shapes(1, 3, 6), dtype=st.sampled_from(FLOAT_DTYPES + INT_DTYPES),
       reduce=st.sampled_from(["none", "sum", "prod", "amax", "amin", "mean"]))
def test_gather_scatter_index_add(data, shape, dtype, reduce):
    assume(all(s > 0 for s in shape))
    dim = data.draw(st.integers(0, len(shape) - 1))
    x = data.draw(strided_tensor(shape, dtype))
    idx_shape = tuple(data.draw(st.integers(1, s)) for s in shape)
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 1000)))
    index = torch.randint(0, shape[dim], idx_shape, generator=g)
    src = data.draw(strided_tensor(idx_shape, dtype))
    n, ni, ns = to_neuron_tensor(x), index.to("neuron"), to_neuron_tensor(src)
    same(torch.gather(n, dim, ni), torch.gather(x, dim, index))
    if reduce == "none":
        # scatter without a reduction picks an unspecified winner among duplicate targets: only unique ones
        assume(index.flatten().unique().numel() == index.numel() or index.size(dim) == 1)
        same(torch.scatter(n, dim, ni, ns), torch.scatter(x, dim, index, src))
    else:
        want = torch.scatter_reduce(x, dim, index, src, reduce=reduce)
        got = torch.scatter_reduce(n, dim, ni, ns, reduce=reduce)
        if dtype.is_floating_point and reduce in ("sum", "mean", "prod"):
            torch.testing.assert_close(got.cpu(), want, equal_nan=True)  # summation order is the kernel's
        else:
            same(got, want)
    index1 = torch.randint(0, shape[dim], (idx_shape[dim],), generator=g)
    source = data.draw(strided_tensor(tuple(idx_shape[dim] if d == dim else s for d, s in enumerate(shape)), dtype))
    want = x.index_add(dim, index1, source)
    got = n.index_add(dim, index1.to("neuron"), to_neuron_tensor(source))
    if dtype.is_floating_point:
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)
    else:
        same(got, want)
