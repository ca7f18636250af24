"""``nki_ops::rmsnorm`` and ``nki_ops::layernorm`` (+ their backward ops): normalisation over the last dim."""

from __future__ import annotations

import torch

from torchneuron.custom_ops import nki_op

from .. import layernorm as ln_kernels
from .. import rmsnorm as rms_kernels
from ._common import check_last_dim, rows


@nki_op("nki_ops::rmsnorm_fwd", mutates_args=())
def _rmsnorm_fwd(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    y, rstd = rms_kernels.rmsnorm_fwd_kernel(rows(x), weight, eps)
    return y.view(x.shape), rstd


@nki_op("nki_ops::rmsnorm_backward", mutates_args=())
def _rmsnorm_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                 rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dx, dw = rms_kernels.rmsnorm_bwd_kernel(rows(dy.contiguous()), rows(x), weight, rstd)
    return dx.view(x.shape), dw.to(weight.dtype)


def _rms_setup(ctx, inputs, output) -> None:
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _rms_backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = _rmsnorm_bwd(dy, x, weight, rstd)
    return dx, dw, None


_rmsnorm_fwd.register_autograd(_rms_backward, setup_context=_rms_setup)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)`` on the NKI kernel."""
    check_last_dim("rmsnorm", x, weight, "weight")
    return _rmsnorm_fwd(x, weight, float(eps))[0]


def reference_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """In float32 (float64 stays float64), rounded to x's dtype."""
    compute = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(compute)
    return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps) * weight.to(compute)).to(x.dtype)


@nki_op("nki_ops::layernorm_fwd", mutates_args=())
def _layernorm_fwd(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    y, mean, rstd = ln_kernels.layernorm_fwd_kernel(rows(x), weight, bias, eps)
    return y.view(x.shape), mean, rstd


@nki_op("nki_ops::layernorm_backward", mutates_args=())
def _layernorm_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor,
                   rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dx, dg, db = ln_kernels.layernorm_bwd_kernel(rows(dy.contiguous()), rows(x), weight, mean, rstd)
    return dx.view(x.shape), dg.to(weight.dtype), db.to(weight.dtype)


def _ln_setup(ctx, inputs, output) -> None:
    x, weight, _, _ = inputs
    ctx.save_for_backward(x, weight, output[1], output[2])


def _ln_backward(ctx, dy, _dmean, _drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dg, db = _layernorm_bwd(dy, x, weight, mean, rstd)
    return dx, dg, db, None


_layernorm_fwd.register_autograd(_ln_backward, setup_context=_ln_setup)


def layernorm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
              eps: float = 1e-5) -> torch.Tensor:
    """``torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)`` on the NKI kernel."""
    check_last_dim("layernorm", x, weight, "weight")
    check_last_dim("layernorm", x, bias, "bias")
    cols = x.shape[-1]
    if weight is None:
        weight = torch.ones(cols, dtype=x.dtype, device=x.device)
    if bias is None:
        bias = torch.zeros(cols, dtype=weight.dtype, device=x.device)
    return _layernorm_fwd(x, weight, bias, float(eps))[0]


def reference_layernorm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                        eps: float = 1e-5) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)
