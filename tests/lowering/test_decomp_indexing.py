"""Indexing / scatter / scan / sort-based decompositions (torchneuron/lowering/decomp_indexing/): each op is
lowered alone (the strict-eager path: single-op lowering → StableHLO → XLA:CPU) and compared with CPU eager,
on inputs chosen to hit the hard cases (duplicate scatter indices, ties, NaN, integer dtypes)."""


import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import assert_opinfo_lowers
from tests.lowering.decomp_check import check_fn, check_op, lowered_op

aten = torch.ops.aten
nan = float("nan")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------------------------------------ scans
def test_cumprod_float_int_and_dtype():
    g = _gen()
    check_op(aten.cumprod.default, torch.randn(3, 9, generator=g), 1)
    check_op(aten.cumprod.default, torch.randint(-3, 4, (4, 6), generator=g), 0)  # int → int64
    check_op(aten.cumprod.default, torch.randint(-3, 4, (4, 6), generator=g), 1, dtype=torch.float32)


@pytest.mark.parametrize("op", [aten.cummax.default, aten.cummin.default], ids=["cummax", "cummin"])
def test_cummax_cummin_ties_and_nan(op):
    x = torch.tensor([[1., 3., 3., nan, 2., nan, 5., 5.], [0., 0., -1., -1., 2., 2., 2., -3.]])
    check_op(op, x, 1)  # ties → last index; NaN sticks, index of the latest NaN
    check_op(op, torch.randint(0, 3, (3, 11), generator=_gen()), 1)


# ---------------------------------------------------------------------------------- scatter reductions
_SCATTER_FAST = [("sum", False), ("prod", True), ("mean", False), ("amax", True), ("amin", False)]
_SCATTER_SLOW = [(r, not inc) for r, inc in _SCATTER_FAST]


@pytest.mark.parametrize("reduce,include_self",
                         _SCATTER_FAST + [pytest.param(*c, marks=pytest.mark.slow) for c in _SCATTER_SLOW])
def test_scatter_reduce_duplicates(reduce, include_self):
    g = _gen(1)
    idx = torch.randint(0, 4, (5, 3), generator=g)  # 15 writes into 4 rows: many duplicates
    check_op(aten.scatter_reduce.two, torch.randn(4, 6, generator=g), 0, idx, torch.randn(5, 4, generator=g),
          reduce, include_self=include_self)


@pytest.mark.parametrize("reduce", ["mean", pytest.param("prod", marks=pytest.mark.slow),
                                    pytest.param("amax", marks=pytest.mark.slow)])
def test_scatter_reduce_int(reduce):
    g = _gen(2)
    self = torch.randint(-9, 9, (3, 6), generator=g, dtype=torch.int32)
    idx = torch.randint(0, 6, (3, 8), generator=g)
    src = torch.randint(-5, 5, (3, 8), generator=g, dtype=torch.int32)
    check_op(aten.scatter_reduce.two, self, 1, idx, src, reduce, include_self=False)  # floor-mean


def test_scatter_legacy_reduce_and_index_reduce():
    g = _gen(3)
    self, idx = torch.randn(4, 6, generator=g), torch.randint(0, 4, (5, 3), generator=g)
    src = torch.randn(5, 4, generator=g)
    check_op(aten.scatter.reduce, self, 0, idx, src, reduce="multiply")
    check_op(aten.index_reduce.default, self, 1, torch.tensor([0, 5, 0, 2]), torch.randn(4, 4, generator=g),
          "amin", include_self=False)
    check_op(aten.index_reduce.default, self, 0, torch.tensor([3, 0, 3]), torch.randn(3, 6, generator=g), "mean")


def test_put_and_masked_index_put():
    g = _gen(4)
    x = torch.randn(5, 5, generator=g)
    check_op(aten.put.default, x, torch.tensor([[0, -1], [7, 0]]), torch.randn(2, 2, generator=g), True)
    mask = torch.tensor([True, False, True, True, False])
    check_op(aten.index_put.default, x, [mask], torch.randn(3, 5, generator=g), False)  # one row per True
    check_op(aten.index_put.default, x, [x > 0], torch.tensor(2.0), True)
    # integer indices count from the end when negative (torch-mlir's scatter dropped them)
    check_op(aten.index_put.default, x, [None, torch.tensor([-1, 1])], torch.randn(5, 2, generator=g), False)
    check_op(aten.index_put.default, x, [torch.tensor([-2]), torch.tensor([-5])], torch.tensor(3.0), True)


# ----------------------------------------------------------------------------------- search and move
@pytest.mark.parametrize("kwargs", [{"side": "right", "out_int32": True}, pytest.param({}, marks=pytest.mark.slow),
                                    pytest.param({"right": True}, marks=pytest.mark.slow)])
def test_searchsorted_with_duplicates_and_nan(kwargs):
    seq = torch.tensor([0., 1., 1., 1., 3., 4., 4., 7.])
    vals = torch.tensor([[-1., 0., 1., 2.5, 4., 7., 9., nan]])
    check_op(aten.searchsorted.Tensor, seq, vals, **kwargs)


def test_searchsorted_batched_and_sorter():
    g = _gen(5)
    check_op(aten.searchsorted.Tensor, torch.sort(torch.randn(3, 9, generator=g), -1)[0],
          torch.randn(3, 4, generator=g))
    un = torch.randn(8, generator=g)
    check_op(aten.searchsorted.Tensor, un, torch.randn(5, generator=g), sorter=torch.argsort(un))


def test_roll_narrow_copy_nonzero_static():
    g = _gen(6)
    x = torch.randn(4, 5, 3, generator=g)
    check_op(aten.roll.default, x, [0, 7], [0, -1])
    check_op(aten.roll.default, x, [-3])
    check_op(aten.narrow_copy.default, x, 1, 0, 0)
    check_op(aten.narrow_copy.default, x, 1, -3, 2)
    y = torch.tensor([[0., 1., 0.], [2., 0., 3.]])
    check_op(aten.nonzero_static.default, y, size=2)  # truncated
    check_op(aten.nonzero_static.default, y, size=5, fill_value=7)  # padded


# ------------------------------------------------------------------------------------- sort-based
def test_mode_ties():
    x = torch.tensor([[2., 1., 2., 1., 3.], [4., 4., 0., 0., 0.], [5., 6., 7., 8., 9.]])
    check_op(aten.mode.default, x, 1)  # tie → smallest value, index of its last occurrence
    check_op(aten.mode.default, torch.randint(0, 3, (5, 7), generator=_gen(7)), 0, True)


def test_nanmedian():
    y = torch.tensor([[1., nan, 3., 1., 2., 2.], [nan] * 6, [5., 4., nan, 4., 4., 5.]])
    check_op(aten.nanmedian.dim, y, 1)
    check_op(aten.nanmedian.default, y)


# ----------------------------------------------------------------------------- scatter views, histograms
def test_diagonal_and_as_strided_scatter():
    g = _gen(8)
    x = torch.randn(4, 5, 3, generator=g)
    check_op(aten.diagonal_scatter.default, x, torch.randn(3, 3, generator=g), -2, 1, 0)
    check_op(aten.as_strided_scatter.default, torch.randn(5, 5, generator=g), torch.randn(2, 3, generator=g),
          [2, 3], [5, 1], 2)


def test_histograms():
    g = _gen(9)
    h = torch.randn(50, generator=g)
    check_op(aten.histc.default, h, 7, -1, 1.5)
    check_op(aten.histc.default, torch.ones(6), 4)  # empty data range widened by 1
    check_op(aten.histogram.bin_ct, h, 5, range=[-1., 1.], weight=torch.rand(50, generator=g), density=True)
    check_op(aten._histogramdd_from_bin_tensors.default, torch.randn(20, 2, generator=g),
          [torch.tensor([-1., 0., 1.]), torch.tensor([-2., 0.5, 2.])])


@pytest.mark.parametrize("reduce", ["mean", pytest.param("max", marks=pytest.mark.slow),
                                    pytest.param("prod", marks=pytest.mark.slow)])
def test_segment_reduce(reduce):
    d = torch.randn(6, 3, generator=_gen(10))
    lengths = torch.tensor([2, 0, 3, 1])  # an empty segment
    check_op(aten.segment_reduce.default, d, reduce, lengths=lengths)
    check_op(aten.segment_reduce.default, d, reduce, lengths=lengths, initial=0.5)


def test_hash_tensor_bits():
    # float32 subnormals, signed zero, inf and NaN all have to map to their float64 bit patterns
    x = torch.tensor([[1e-40, -3e-45, -0.0, float("inf")], [nan, 1.5, -2.25, 3e38]])
    for args in [(x,), (x, [1])]:
        got, want = lowered_op(aten.hash_tensor.default, *args), aten.hash_tensor.default(*args)
        assert got.dtype == torch.uint64 and torch.equal(got, want)


# ------------------------------------------------------------------------------ the OpInfo sweep's view


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scatter_reduce.amax", "index_reduce.mean", "cumprod", "cummin", "searchsorted",
                                  "isin", "mode", "masked.median", "histogram", "_segment_reduce.offsets"])
def test_opinfo(name):
    assert_opinfo_lowers(name)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 7), min_size=0, max_size=3), data=st.data())
def test_unfold_windows_as_one_gather(shape, data):
    x = torch.randn(shape, generator=_gen(7))
    if x.dim() == 0:
        dim, size, step = 0, 1, data.draw(st.integers(1, 3))
    else:
        dim = data.draw(st.integers(-x.dim(), x.dim() - 1))
        size = data.draw(st.integers(1, x.shape[dim]))
        step = data.draw(st.integers(1, 4))
    check_fn(lambda t: t.unfold(dim, size, step) * 2, x)
