"""Kernel contracts AWS TorchNeuron users meet (issue: missing kernels users hit): convolution_backward's
output_mask, _copy_from_and_resize's size rule, sdpa_kernel(SDPBackend.OVERRIDEABLE)."""

import itertools

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

CONVS = {
    "1d-groups": ((2, 4, 9), (6, 2, 3), dict(stride=[2], padding=[1], dilation=[1], transposed=False,
                                            output_padding=[0], groups=2)),
    "2d-dilated": ((2, 3, 9, 9), (4, 3, 3, 3), dict(stride=[1, 1], padding=[2, 2], dilation=[2, 2], transposed=False,
                                                   output_padding=[0, 0], groups=1)),
    "2d-transposed": ((2, 4, 5, 5), (4, 3, 3, 3), dict(stride=[2, 2], padding=[1, 1], dilation=[1, 1], transposed=True,
                                                      output_padding=[1, 1], groups=1)),
    "3d": ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), dict(stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1],
                                                 transposed=False, output_padding=[0, 0, 0], groups=1)),
}


@pytest.mark.parametrize("case", sorted(CONVS))
@pytest.mark.parametrize("mask", list(itertools.product([False, True], repeat=3)))
def test_convolution_backward_honours_output_mask(case, mask):
    """Each gradient is computed when asked for, and the results equal the CPU's (also which are None)."""
    xs, ws, kw = CONVS[case]
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(xs, generator=g), torch.randn(ws, generator=g)
    bias = [w.shape[1] * kw["groups"] if kw["transposed"] else w.shape[0]]
    out = torch.ops.aten.convolution(x, w, None, *kw.values())
    go = torch.randn(out.shape, generator=g)
    cpu = torch.ops.aten.convolution_backward(go, x, w, bias, *kw.values(), list(mask))
    dev = torch.ops.aten.convolution_backward(go.to("neuron"), x.to("neuron"), w.to("neuron"), bias, *kw.values(),
                                              list(mask))
    for i, (c, d) in enumerate(zip(cpu, dev)):
        assert (c is None) == (d is None), (i, mask)
        if mask[i]:
            assert d is not None and d.device.type == "neuron"
        if c is not None:
            torch.testing.assert_close(d.cpu(), c, atol=1e-4, rtol=1e-4)


def test_convolution_weight_only_gradient_through_autograd():
    x = torch.randn(2, 3, 8, 8)
    conv = torch.nn.Conv2d(3, 4, 3)
    dconv = torch.nn.Conv2d(3, 4, 3).to("neuron")
    dconv.load_state_dict(conv.state_dict())
    conv(x).square().sum().backward()
    dx = x.to("neuron")  # no gradient asked for the input: output_mask[0] is False
    dconv(dx).square().sum().backward()
    assert dx.grad is None
    torch.testing.assert_close(dconv.weight.grad.cpu(), conv.weight.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(dconv.bias.grad.cpu(), conv.bias.grad, atol=1e-4, rtol=1e-4)


def test_copy_from_and_resize_sizes_only_an_empty_destination():
    src = torch.arange(6.0).reshape(2, 3).to("neuron")
    empty = torch.empty(0, device="neuron")
    torch.ops.aten._copy_from_and_resize(src, empty)
    assert empty.shape == (2, 3) and torch.equal(empty.cpu(), src.cpu())
    same = torch.zeros(2, 3, device="neuron")
    torch.ops.aten._copy_from_and_resize(src, same)
    assert torch.equal(same.cpu(), src.cpu())
    other = torch.zeros(5, device="neuron")
    with pytest.raises(RuntimeError, match=r"cannot copy a tensor of shape \[2, 3\] into one of shape \[5\]"):
        torch.ops.aten._copy_from_and_resize(src, other)
    assert other.shape == (5,) and not other.cpu().any()  # untouched


def test_copy_from_and_resize_into_a_host_tensor():
    src = torch.arange(4.0).to("neuron")
    host = torch.empty(0)
    torch.ops.aten._copy_from_and_resize(src, host)
    assert torch.equal(host, torch.arange(4.0))
    with pytest.raises(RuntimeError, match="only an empty destination is resized"):
        torch.ops.aten._copy_from_and_resize(src, torch.zeros(3))


def _qkv(requires_grad=False, **kw):
    g = torch.Generator().manual_seed(1)
    shape = kw.pop("shape", (2, 3, 5, 8))
    return [torch.randn(shape, generator=g).requires_grad_(requires_grad) for _ in range(3)]


def test_sdpa_overrideable_selects_the_device_attention():
    q, k, v = _qkv(requires_grad=True)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref.sum().backward()
    dq, dk, dv = (t.detach().to("neuron").requires_grad_() for t in (q, k, v))
    with sdpa_kernel(SDPBackend.OVERRIDEABLE):
        out = F.scaled_dot_product_attention(dq, dk, dv, is_causal=True)
        out.sum().backward()
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-5)
    for d, c in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(d.grad.cpu(), c.grad, atol=1e-5, rtol=1e-5)


def test_sdpa_overrideable_under_compile():
    q, k, v = _qkv()
    ref = F.scaled_dot_product_attention(q, k, v)

    def attend(a, b, c):
        with sdpa_kernel(SDPBackend.OVERRIDEABLE):
            return F.scaled_dot_product_attention(a, b, c)

    out = torch.compile(attend, backend="neuron")(*(t.to("neuron") for t in (q, k, v)))
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


def test_sdpa_overrideable_refuses_what_it_cannot_run_by_name():
    dq, dk, dv = (t.to("neuron") for t in _qkv())
    with sdpa_kernel(SDPBackend.OVERRIDEABLE), pytest.raises(RuntimeError, match=r"OVERRIDEABLE.*dropout_p > 0"):
        F.scaled_dot_product_attention(dq, dk, dv, dropout_p=0.5)
    # with MATH allowed as well, the math path takes it
    with sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(dq, dk, dv, dropout_p=0.5)
    assert out.shape == dq.shape
