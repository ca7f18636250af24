"""``nki_ops::linear`` (x @ w.T + b, optionally fused with an activation) and ``nki_ops::matmul`` (a @ b), with
their backward ops. The Tensor engine takes one dtype for both operands."""

from __future__ import annotations

import torch

from torchneuron.custom_ops import nki_op

from .. import matmul as kernels
from ._common import check_same_dtype, rows


@nki_op("nki_ops::linear", mutates_args=())
def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    y = kernels.gemm_kernel(rows(x), weight, bias, False, True, "none", False)
    return y.view(*x.shape[:-1], weight.shape[0])


@nki_op("nki_ops::linear_act", mutates_args=())
def _linear_act(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                activation: str) -> tuple[torch.Tensor, torch.Tensor]:
    y, pre = kernels.gemm_kernel(rows(x), weight, bias, False, True, activation, True)
    shape = (*x.shape[:-1], weight.shape[0])
    return y.view(shape), pre.view(shape)


@nki_op("nki_ops::linear_backward", mutates_args=())
def _linear_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, with_bias: bool) -> list[torch.Tensor]:
    grads = kernels.linear_bwd_kernel(rows(dy.contiguous()), rows(x), weight, with_bias)
    dx = grads[0].view(x.shape)
    out = [dx, grads[1]]
    if with_bias:
        out.append(grads[2].to(weight.dtype))
    return out


@nki_op("nki_ops::activation_backward", mutates_args=())
def _activation_bwd(dy: torch.Tensor, pre: torch.Tensor, activation: str) -> torch.Tensor:
    return kernels.activation_bwd_kernel(rows(dy.contiguous()), rows(pre), activation).view(pre.shape)


def _linear_setup(ctx, inputs, output) -> None:
    x, weight, bias = inputs[:3]
    ctx.with_bias = bias is not None
    ctx.save_for_backward(x, weight)


def _linear_backward(ctx, dy):
    x, weight = ctx.saved_tensors
    grads = _linear_bwd(dy, x, weight, ctx.with_bias)
    return grads[0], grads[1], grads[2] if ctx.with_bias else None


def _linear_act_setup(ctx, inputs, output) -> None:
    x, weight, bias, activation = inputs
    ctx.with_bias, ctx.activation = bias is not None, activation
    ctx.save_for_backward(x, weight, output[1])


def _linear_act_backward(ctx, dy, _dpre):
    x, weight, pre = ctx.saved_tensors
    dz = _activation_bwd(dy, pre, ctx.activation)
    grads = _linear_bwd(dz, x, weight, ctx.with_bias)
    return grads[0], grads[1], grads[2] if ctx.with_bias else None, None


_linear.register_autograd(_linear_backward, setup_context=_linear_setup)
_linear_act.register_autograd(_linear_act_backward, setup_context=_linear_act_setup)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           activation: str = "none") -> torch.Tensor:
    """``act(torch.nn.functional.linear(x, weight, bias))``; activation: none, relu, gelu, gelu_tanh, silu."""
    check_same_dtype("linear", x=x, weight=weight, bias=bias)
    if activation not in kernels.ACTIVATIONS:
        raise ValueError(f"nki_ops.linear: activation must be one of {kernels.ACTIVATIONS}, got {activation!r}.")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"nki_ops.linear: x has {x.shape[-1]} features but weight {tuple(weight.shape)} expects "
                         f"{weight.shape[1]}.")
    if activation == "none":
        return _linear(x, weight, bias)
    return _linear_act(x, weight, bias, activation)[0]


@nki_op("nki_ops::matmul", mutates_args=())
def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return kernels.gemm_kernel(a, b, None, False, False, "none", False)


@nki_op("nki_ops::matmul_backward", mutates_args=())
def _matmul_bwd(dy: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dy = dy.contiguous()
    da = kernels.gemm_kernel(dy, b, None, False, True, "none", False)   # dy @ b.T
    db = kernels.gemm_kernel(a, dy, None, True, False, "none", False)   # a.T @ dy
    return da, db


def _matmul_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _matmul_backward(ctx, dy):
    a, b = ctx.saved_tensors
    return _matmul_bwd(dy, a, b)


_matmul.register_autograd(_matmul_backward, setup_context=_matmul_setup)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for 2-D a [M, K], b [K, N] on the NKI kernel."""
    check_same_dtype("matmul", a=a, b=b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"nki_ops.matmul takes a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}.")
    return _matmul(a, b)


_ACT = {"none": lambda z: z, "relu": torch.relu, "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
        "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh")}


def reference_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                     activation: str = "none") -> torch.Tensor:
    return _ACT[activation](torch.nn.functional.linear(x, weight, bias))
