"""``nki_ops::adamw_``: one fused AdamW step over lists of parameters and their state, in place."""

from __future__ import annotations

import torch

from torchneuron.custom_ops import nki_op

from .. import adamw as kernels


@nki_op("nki_ops::adamw_", mutates_args=("params", "exp_avgs", "exp_avg_sqs"))
def adamw_(params: list[torch.Tensor], grads: list[torch.Tensor], exp_avgs: list[torch.Tensor],
           exp_avg_sqs: list[torch.Tensor], lr: float, beta1: float, beta2: float, eps: float,
           weight_decay: float, step: int) -> None:
    """``torch.optim.AdamW``'s update for every param (with its grad, exp_avg and exp_avg_sq) at ``step``
    (1-based); params and state must be contiguous neuron tensors."""
    if not params:
        return
    for name, group in (("grads", grads), ("exp_avgs", exp_avgs), ("exp_avg_sqs", exp_avg_sqs)):
        if len(group) != len(params):
            raise ValueError(f"nki_ops.adamw_: {len(params)} params but {len(group)} {name}.")
    for i, p in enumerate(params):
        for t in (p, grads[i], exp_avgs[i], exp_avg_sqs[i]):
            if not t.is_contiguous() or t.shape != p.shape:
                raise ValueError(f"nki_ops.adamw_: param {i} {tuple(p.shape)} and its grad/state must be contiguous "
                                 "tensors of the same shape.")
    hyper = torch.tensor(kernels.hyper_values(lr, weight_decay, beta1, beta2, step), dtype=torch.float32,
                         device=params[0].device)
    flat = [[t.view(-1) for t in group] for group in (params, grads, exp_avgs, exp_avg_sqs)]
    kernels.adamw_kernel(*flat, hyper, beta1, beta2, eps)


def reference_adamw_(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay, step) -> None:
    for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs):
        p.mul_(1 - lr * weight_decay)
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
        p.addcdiv_(m, (v / bc2).sqrt().add_(eps), value=-lr / bc1)
