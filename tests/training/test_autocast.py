"""torch.autocast("neuron"): the CUDA op policy (csrc/amp/AutocastPolicy.cpp), values as the CPU computes them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

LOW = (torch.bfloat16, torch.float16)


def rand(*shape):
    return torch.randn(*shape, device="neuron")


# op -> the dtype it must produce under autocast(dtype=low); "low" means the autocast dtype.
POLICY = {
    "mm": (lambda: torch.mm(rand(4, 8), rand(8, 3)), "low"),
    "matmul": (lambda: rand(2, 4, 8) @ rand(8, 3), "low"),
    "bmm": (lambda: torch.bmm(rand(2, 4, 8), rand(2, 8, 3)), "low"),
    "baddbmm": (lambda: torch.baddbmm(rand(2, 4, 3), rand(2, 4, 8), rand(2, 8, 3)), "low"),
    "addmm": (lambda: torch.addmm(rand(3), rand(4, 8), rand(8, 3)), "low"),
    "linear": (lambda: F.linear(rand(4, 8), rand(3, 8), rand(3)), "low"),
    "conv2d": (lambda: F.conv2d(rand(1, 2, 5, 5), rand(3, 2, 3, 3)), "low"),
    "sdpa": (lambda: F.scaled_dot_product_attention(rand(1, 2, 4, 8), rand(1, 2, 4, 8), rand(1, 2, 4, 8)), "low"),
    "exp": (lambda: torch.exp(rand(4).bfloat16()), torch.float32),
    "log_softmax": (lambda: F.log_softmax(rand(4, 5).half(), dim=-1), torch.float32),
    "softmax": (lambda: torch.softmax(rand(4, 5).bfloat16(), dim=-1), torch.float32),
    "layer_norm": (lambda: F.layer_norm(rand(4, 8).bfloat16(), (8,)), torch.float32),
    "sum": (lambda: rand(4).bfloat16().sum(), torch.float32),
    "mse_loss": (lambda: F.mse_loss(rand(4).half(), rand(4).half()), torch.float32),
    "cross_entropy": (lambda: F.cross_entropy(rand(4, 5).bfloat16(), torch.arange(4, device="neuron")), torch.float32),
    "pow": (lambda: torch.pow(rand(4).half(), 2), torch.float32),
    "addcmul": (lambda: torch.addcmul(rand(4), rand(4).bfloat16(), rand(4).bfloat16()), torch.float32),  # promote
    "add": (lambda: rand(4).bfloat16() + rand(4).bfloat16(), "input"),  # not on any list: unchanged
    "relu": (lambda: F.relu(rand(4).half()), "input"),
}


@pytest.mark.parametrize("dtype", LOW, ids=["bf16", "fp16"])
@pytest.mark.parametrize("op", list(POLICY))
def test_op_policy_matches_cuda_lists(op, dtype):
    fn, want = POLICY[op]
    with torch.autocast("neuron", dtype=dtype):
        out = fn()
    if want == "low":
        assert out.dtype == dtype
    elif want == "input":
        assert out.dtype in LOW  # the op kept its input dtype
    else:
        assert out.dtype == want
    assert out.device.type == "neuron"


@pytest.mark.parametrize("dtype", LOW, ids=["bf16", "fp16"])
def test_values_are_the_cpu_computation_in_the_autocast_dtype(dtype):
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    with torch.autocast("neuron", dtype=dtype):
        got = torch.mm(a.to("neuron"), b.to("neuron"))
    want = torch.mm(a.to(dtype), b.to(dtype))
    assert torch.equal(got.cpu(), want)


def test_autocast_is_off_outside_and_in_disabled_regions():
    a = rand(4, 4)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("neuron")
        assert torch.get_autocast_dtype("neuron") == torch.bfloat16
        with torch.autocast("neuron", enabled=False):
            assert (a @ a).dtype == torch.float32
        assert (a @ a).dtype == torch.bfloat16
    assert (a @ a).dtype == torch.float32
    assert not torch.is_autocast_enabled("neuron")


def test_cpu_tensors_are_not_autocast_by_neuron_autocast():
    with torch.autocast("neuron", dtype=torch.bfloat16):
        assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.float32


def test_binary_cross_entropy_is_banned_as_on_cuda():
    with torch.autocast("neuron", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="(?s)unsafe to autocast.*binary_cross_entropy_with_logits"):
            F.binary_cross_entropy(torch.sigmoid(rand(4)), torch.rand(4, device="neuron"))
        assert F.binary_cross_entropy_with_logits(rand(4), torch.rand(4, device="neuron")).dtype == torch.float32


def test_backward_through_autocast_gives_float32_grads():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to("neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        out = model(rand(4, 8))
        loss = F.cross_entropy(out, torch.tensor([0, 1, 0, 1], device="neuron"))
    assert out.dtype == torch.bfloat16 and loss.dtype == torch.float32
    loss.backward()
    for p in model.parameters():
        assert p.grad.dtype == torch.float32 and p.grad.device.type == "neuron"


def test_torch_neuron_amp_autocast_alias():
    with torch.neuron.amp.autocast(dtype=torch.float16):
        assert (rand(2, 2) @ rand(2, 2)).dtype == torch.float16


def test_unsupported_autocast_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="neuron"):
        with torch.autocast("neuron", dtype=torch.int8):
            assert (rand(2, 2) @ rand(2, 2)).dtype == torch.float32


def test_custom_fwd_casts_inputs_under_neuron_autocast():
    class Square(torch.autograd.Function):
        @staticmethod
        @torch.neuron.amp.custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @torch.neuron.amp.custom_bwd
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(4, device="neuron", dtype=torch.bfloat16, requires_grad=True)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        y = Square.apply(x)
    assert y.dtype == torch.float32  # inputs were cast to float32 inside the autocast region
    y.sum().backward()
    assert x.grad.dtype == torch.bfloat16


def test_registered_policy_is_cudas_minus_cudnn_ops():
    cuda = set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCUDA"))
    neuron = set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastPrivateUse1"))
    assert cuda - neuron == {"aten::cudnn_convolution", "aten::cudnn_convolution_transpose"}
    assert neuron <= cuda
