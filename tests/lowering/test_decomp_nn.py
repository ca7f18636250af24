"""The nn.functional decompositions (torchneuron/lowering/decomp_nn/): each ATen op runs through single-op
lowering (decomposition → StableHLO → XLA:CPU) and must match CPU eager, on odd sizes and parameter variety
(stride/padding/dilation/output_padding/groups, ceil mode, reduced precision)."""

import pytest
import torch

from tests.helpers import assert_opinfo_lowers
from tests.lowering.decomp_check import check_fn, check_op

aten = torch.ops.aten


def _randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


@pytest.mark.parametrize("op,pad", [
    (aten.reflection_pad1d.default, [2, 3]),
    (aten.reflection_pad2d.default, [1, -1, 2, 0]),
    (aten.replication_pad2d.default, [3, 1, 0, 2]),
    (aten.replication_pad3d.default, [1, 2, 0, 1, 2, 0]),
])
def test_padding(op, pad):
    nd = len(pad) // 2
    check_op(op, _randn(2, 3, *[5, 6, 7][:nd]), pad)


def test_padding_zero_size_batch():
    check_op(aten.reflection_pad1d.default, _randn(0, 3, 3), [1, 2])


@pytest.mark.parametrize("size,out", [([7, 9], [3, 4]), ([8, 8], [4, 2])])
def test_adaptive_avg_pool2d(size, out):
    check_op(aten._adaptive_avg_pool2d.default, _randn(2, 3, *size), out)


def test_adaptive_avg_pool3d_bf16():
    check_op(aten._adaptive_avg_pool3d.default, _randn(2, 3, 5, 7, 6, dtype=torch.bfloat16), [2, 3, 4])


def test_adaptive_max_pool3d():
    check_op(aten.adaptive_max_pool3d.default, _randn(2, 3, 5, 7, 6), [3, 4, 2])


@pytest.mark.parametrize("kw", [
    dict(kernel_size=[3, 2, 2], stride=[2, 1, 2], padding=[1, 0, 1], ceil_mode=True, count_include_pad=True),
    dict(kernel_size=[2, 3, 3], stride=[2, 2, 1], padding=[1, 1, 0], ceil_mode=True, count_include_pad=False),
    dict(kernel_size=[2, 2, 2], stride=[], padding=[0, 0, 0], ceil_mode=False, count_include_pad=True,
         divisor_override=3),
])
def test_avg_pool3d(kw):
    check_op(aten.avg_pool3d.default, _randn(2, 3, 5, 7, 6), **kw)


@pytest.mark.parametrize("args", [
    ([3, 2, 2], [2, 1, 2], [1, 0, 1], [1, 1, 1], True),
    ([2, 3, 2], [1, 2, 2], [0, 1, 0], [2, 1, 2], False),
])
def test_max_pool3d_with_indices(args):
    check_op(aten.max_pool3d_with_indices.default, _randn(2, 3, 7, 8, 6), *args)


def test_max_pool3d_ties_take_first_index():
    x = torch.zeros(1, 1, 4, 4, 4)
    x[0, 0, 1, 1, 1] = 1.0
    check_op(aten.max_pool3d_with_indices.default, x, [2, 2, 2], [1, 1, 1], [0, 0, 0], [1, 1, 1], False)


@pytest.mark.parametrize("shape,weight,stride,padding,dilation,output_padding,groups", [
    ([2, 4, 5, 6], [4, 3, 3, 2], [2, 3], [1, 0], [1, 1], [1, 2], 1),
    ([2, 4, 5, 6], [4, 2, 3, 3], [3, 2], [2, 1], [2, 1], [2, 1], 2),
    ([1, 2, 3, 4, 3], [2, 3, 2, 3, 2], [2, 2, 3], [0, 1, 1], [1, 2, 1], [1, 1, 2], 1),
])
def test_conv_transpose_output_padding(shape, weight, stride, padding, dilation, output_padding, groups):
    x, w = _randn(*shape), _randn(*weight, seed=1)
    b = _randn(weight[1] * groups, seed=2)
    check_op(aten.convolution.default, x, w, b, stride, padding, dilation, True, output_padding, groups)


@pytest.mark.parametrize("output_padding,stride", [
    ([1, 1], [2, 2]),                                              # oneDNN path on CPU: one rounding
    pytest.param([2, 1], [2, 2], marks=pytest.mark.slow),          # output_padding >= stride: col2im rounding
])
def test_conv_transpose_bf16(output_padding, stride):
    x, w = _randn(2, 4, 5, 6, dtype=torch.bfloat16), _randn(4, 3, 3, 2, seed=1, dtype=torch.bfloat16)
    b = _randn(3, seed=2, dtype=torch.bfloat16)
    check_op(aten.convolution.default, x, w, b, stride, [1, 0], [3, 1], True, output_padding, 1)


@pytest.mark.parametrize("batched", [True, False])
def test_im2col(batched):
    x = _randn(2, 3, 7, 8) if batched else _randn(3, 7, 8)
    check_op(aten.im2col.default, x, [3, 2], [2, 1], [1, 2], [2, 3])


@pytest.mark.parametrize("dim,size,step", [(2, 2, 3), pytest.param(0, 3, 1, marks=pytest.mark.slow),
                                            pytest.param(-1, 4, 2, marks=pytest.mark.slow)])
def test_unfold_copy(dim, size, step):
    check_op(aten.unfold_copy.default, _randn(5, 4, 7, 6), dim, size, step)


@pytest.mark.parametrize("p", [2.0, 1.5, pytest.param(1.0, marks=pytest.mark.slow),
                               pytest.param(0.0, marks=pytest.mark.slow),
                               pytest.param(float("inf"), marks=pytest.mark.slow)])
def test_pdist(p):
    check_op(aten._pdist_forward.default, _randn(7, 4), p)


def test_trilinear_bilinear_layout():
    x1, w, x2 = _randn(6, 4), _randn(5, 4, 3, seed=1), _randn(6, 3, seed=2)
    check_op(aten._trilinear.default, x1, w, x2, [1, 3], [0], [1, 2], [2, 3])
    check_op(aten._trilinear.default, x1[:0], w, x2[:0], [1, 3], [0], [1, 2], [2, 3])


@pytest.mark.parametrize("mode,padding_idx,include_last_offset", [
    (0, 2, True), (1, -1, True), (2, -1, False),
    pytest.param(0, -1, False, marks=pytest.mark.slow), pytest.param(1, 4, False, marks=pytest.mark.slow),
    pytest.param(2, 2, True, marks=pytest.mark.slow)])
def test_embedding_bag(mode, padding_idx, include_last_offset):
    w = _randn(10, 3)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    off = torch.tensor([0, 0, 4, 5])
    psw = _randn(8, seed=3) if mode == 0 else None
    check_op(aten._embedding_bag.default, w, idx, off, False, mode, False, psw, include_last_offset, padding_idx)
    check_op(aten._embedding_bag_forward_only.default, w, idx, off, False, mode, False, psw, include_last_offset,
           padding_idx)


def test_embedding_renorm():
    check_op(aten.embedding_renorm.default, _randn(10, 4) * 2, torch.tensor([[1, 3], [3, 9]]), 1.5, 2.0)


@pytest.mark.parametrize("interp,padding_mode,align_corners", [
    (0, 2, True), pytest.param(0, 0, False, marks=pytest.mark.slow), pytest.param(1, 1, False, marks=pytest.mark.slow)])
def test_grid_sampler_3d(interp, padding_mode, align_corners):
    x = _randn(2, 3, 4, 5, 6)
    grid = torch.rand(2, 3, 4, 2, 3, generator=torch.Generator().manual_seed(1)) * 2.6 - 1.3
    check_op(aten.grid_sampler_3d.default, x, grid, interp, padding_mode, align_corners)


@pytest.mark.parametrize("interp,padding_mode", [(0, 1), pytest.param(2, 2, marks=pytest.mark.slow)])
def test_grid_sampler_2d_bf16(interp, padding_mode):
    x = _randn(2, 3, 5, 6, dtype=torch.bfloat16)
    grid = (torch.rand(2, 3, 4, 2, generator=torch.Generator().manual_seed(1)) * 2.6 - 1.3).bfloat16()
    check_op(aten.grid_sampler_2d.default, x, grid, interp, padding_mode, False)


@pytest.mark.parametrize("out,align_corners,scales", [
    ([5, 7], False, (None, None)), ([6, 9], False, (0.47, 0.55)),
    pytest.param([20, 30], True, (None, None), marks=pytest.mark.slow)])
def test_upsample_bilinear2d_aa(out, align_corners, scales):
    check_op(aten._upsample_bilinear2d_aa.default, _randn(2, 3, 13, 17), out, align_corners, *scales)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fractional_max_pool2d(dtype):
    g = torch.Generator().manual_seed(4)
    check_op(aten.fractional_max_pool2d.default, _randn(2, 3, 11, 9, dtype=dtype), [3, 2], [4, 5],
           torch.rand(2, 3, 2, generator=g).to(dtype))


def test_fractional_max_pool3d():
    g = torch.Generator().manual_seed(4)
    check_op(aten.fractional_max_pool3d.default, _randn(2, 3, 7, 11, 9), [2, 3, 2], [3, 4, 5],
           torch.rand(2, 3, 3, generator=g))


@pytest.mark.parametrize("reduction,weighted", [("mean", True), ("sum", False)])
def test_linear_cross_entropy_chunked(reduction, weighted):
    import torch.nn.modules.linear_cross_entropy  # noqa: F401  (registers the op)

    op = torch.ops.torch_nn._linear_cross_entropy_batch_chunked.default
    x, lw, lb = _randn(7, 5), _randn(6, 5, seed=1), _randn(6, seed=2)
    target = torch.tensor([0, 1, 5, 2, -100, 3, 3])
    w = torch.rand(6, generator=torch.Generator().manual_seed(3)) if weighted else None
    check_op(op, x, lw, target, lb, w, reduction, -100, 0.0, 2, "precise", torch.float32, True, True, True, True)


def test_linear_cross_entropy_chunked_none():
    import torch.nn.modules.linear_cross_entropy  # noqa: F401

    op = torch.ops.torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default
    check_op(op, _randn(7, 5), _randn(6, 5, seed=1), torch.tensor([0, 1, 5, 2, 3, 3, 3]), None, None, 3, 2,
           "precise", torch.float32)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["nn.functional.conv_transpose2d", "nn.functional.max_pool3d",
                                  "nn.functional.embedding_bag", "nn.functional.unfold", "grid_sampler_3d",
                                  "nn.functional.pad.reflect", "nn.functional.adaptive_avg_pool1d"])
def test_opinfo_float32(name):
    assert_opinfo_lowers(name, max_samples=3)


@pytest.mark.parametrize("layout", ["2d_3d", "3d_2d", "2d_2d", "3d_3d"])
def test_grouped_mm_every_layout(layout):
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(torch.bfloat16)

    offs = torch.tensor([8, 16, 32], dtype=torch.int32)
    a, b = {"2d_3d": (r(32, 16), r(3, 16, 8)), "3d_2d": (r(3, 8, 16), r(16, 32)), "2d_2d": (r(8, 32), r(32, 16)),
            "3d_3d": (r(2, 8, 16), r(2, 16, 8))}[layout]
    if layout == "3d_3d":
        check_fn(lambda x, y: torch._grouped_mm(x, y), a, b)
    else:
        check_fn(lambda x, y: torch._grouped_mm(x, y, offs), a, b)
