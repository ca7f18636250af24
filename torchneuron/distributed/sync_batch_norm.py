"""The ATen kernels behind ``nn.SyncBatchNorm``, for neuron tensors.

``torch.nn.modules._functions.SyncBatchNorm`` (training under DDP) computes per-rank statistics with
``batch_norm_stats``, all-gathers them, merges them with ``batch_norm_gather_stats_with_counts`` and
normalises with ``batch_norm_elemt``; its backward uses ``batch_norm_backward_reduce`` and
``batch_norm_backward_elemt`` (and ``batch_norm_gather_stats``, the older equal-count merge). ATen has these
kernels for CUDA (and MPS) only. Here each is written with
ordinary ATen ops on the neuron tensors (reductions and elementwise ops that have device lowerings), with
CUDA's arithmetic: statistics in float32 for 16-bit inputs, biased variance for normalisation, the
unbiased one for ``running_var``, and Chan's merge of per-rank (count, mean, variance).

Registered for PrivateUse1 at import (``torchneuron.distributed.register``): a few Python definitions and
one ``torch.library`` registration; nothing runs until SyncBatchNorm calls them.
"""

from __future__ import annotations

import torch

_library: torch.library.Library | None = None


def _acc(dtype: torch.dtype) -> torch.dtype:
    """CUDA's accumulation type: float32 for 16-bit floats, the input's own type otherwise."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _dims(x: torch.Tensor) -> list[int]:
    return [0, *range(2, x.dim())]


def _per_channel(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A [C] vector shaped to broadcast over x's channel dimension (dim 1)."""
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


def _check(name: str, x: torch.Tensor) -> None:
    if x.dim() < 2:
        raise ValueError(f"aten::{name} on neuron: input of shape {tuple(x.shape)} has no channel dimension "
                         "(expected (N, C, ...))")


def batch_norm_stats(input: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    _check("batch_norm_stats", input)
    var, mean = torch.var_mean(input.to(_acc(input.dtype)), dim=_dims(input), correction=0)
    return mean, torch.rsqrt(var + eps)


def batch_norm_elemt(input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                     mean: torch.Tensor, invstd: torch.Tensor, eps: float) -> torch.Tensor:
    _check("batch_norm_elemt", input)
    acc = mean.dtype
    scale = invstd if weight is None else invstd * weight.to(acc)
    shift = -mean * scale if bias is None else bias.to(acc) - mean * scale
    y = input.to(acc) * _per_channel(scale, input) + _per_channel(shift, input)
    return y.to(input.dtype)


def batch_norm_elemt_out(input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                         mean: torch.Tensor, invstd: torch.Tensor, eps: float, *, out: torch.Tensor) -> torch.Tensor:
    result = batch_norm_elemt(input, weight, bias, mean, invstd, eps)
    out.resize_(result.shape)
    return out.copy_(result)


def batch_norm_gather_stats_with_counts(input: torch.Tensor, mean: torch.Tensor, invstd: torch.Tensor,
                                        running_mean: torch.Tensor | None, running_var: torch.Tensor | None,
                                        momentum: float, eps: float, counts: torch.Tensor
                                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge per-rank statistics ([world, C] means and inverse std's, [world] counts) into the global mean and
    inverse std; update the running statistics in place (momentum, unbiased variance), as CUDA does."""
    acc = mean.dtype
    n = counts.to(acc).reshape(-1, 1)
    total = n.sum()
    global_mean = (n * mean).sum(0) / total
    var = invstd.reciprocal().square() - eps  # each rank's biased variance
    m2 = (n * (var + (mean - global_mean).square())).sum(0)
    global_invstd = torch.rsqrt(m2 / total + eps)
    with torch.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_((global_mean * momentum).to(running_mean.dtype))
        if running_var is not None:
            unbiased = m2 / (total - 1)
            running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))
    return global_mean, global_invstd


def batch_norm_gather_stats(input: torch.Tensor, mean: torch.Tensor, invstd: torch.Tensor,
                            running_mean: torch.Tensor | None, running_var: torch.Tensor | None, momentum: float,
                            eps: float, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The older form: every rank contributed ``count`` elements per channel."""
    counts = torch.full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_backward_reduce(grad_out: torch.Tensor, input: torch.Tensor, mean: torch.Tensor,
                               invstd: torch.Tensor, weight: torch.Tensor | None, input_g: bool, weight_g: bool,
                               bias_g: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-channel sum(dy) and sum(dy * (x - mean)) on this rank, and the weight and bias gradients.
    Outputs not asked for are empty tensors (CUDA's are undefined)."""
    _check("batch_norm_backward_reduce", input)
    acc = mean.dtype
    dims = _dims(input)
    dy = grad_out.to(acc)
    sum_dy = dy.sum(dims)
    sum_dy_xmu = (dy * (input.to(acc) - _per_channel(mean, input))).sum(dims)
    wdtype = weight.dtype if weight is not None else input.dtype
    empty = input.new_empty(0, dtype=acc)
    return (sum_dy if input_g else empty,
            sum_dy_xmu if input_g else empty,
            (sum_dy_xmu * invstd).to(wdtype) if weight_g else input.new_empty(0, dtype=wdtype),
            sum_dy.to(wdtype) if bias_g else input.new_empty(0, dtype=wdtype))


def batch_norm_backward_elemt(grad_out: torch.Tensor, input: torch.Tensor, mean: torch.Tensor,
                              invstd: torch.Tensor, weight: torch.Tensor | None, sum_dy: torch.Tensor,
                              sum_dy_xmu: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """The input gradient from the all-reduced sums; ``count`` holds every rank's element count per channel."""
    _check("batch_norm_backward_elemt", input)
    acc = mean.dtype
    total = count.to(acc).sum()
    mean_dy = sum_dy / total
    mean_dy_xmu = sum_dy_xmu / total
    scale = invstd if weight is None else invstd * weight.to(acc)
    x_hat_coef = invstd.square() * mean_dy_xmu
    xmu = input.to(acc) - _per_channel(mean, input)
    grad = (grad_out.to(acc) - _per_channel(mean_dy, input) - xmu * _per_channel(x_hat_coef, input))
    grad = grad * _per_channel(scale, input)
    return grad.to(input.dtype)


def register() -> None:
    """Register the kernels for neuron (PrivateUse1), once."""
    global _library
    if _library is not None:
        return
    lib = torch.library.Library("aten", "IMPL")
    for name, fn in (("batch_norm_stats", batch_norm_stats), ("batch_norm_elemt", batch_norm_elemt),
                     ("batch_norm_elemt.out", batch_norm_elemt_out),
                     ("batch_norm_gather_stats_with_counts", batch_norm_gather_stats_with_counts),
                     ("batch_norm_gather_stats", batch_norm_gather_stats),
                     ("batch_norm_backward_reduce", batch_norm_backward_reduce),
                     ("batch_norm_backward_elemt", batch_norm_backward_elemt)):
        lib.impl(name, fn, "PrivateUse1")
    _library = lib
