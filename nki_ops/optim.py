"""``nki_ops.optim.AdamW``: ``torch.optim.AdamW`` whose step is one fused NKI kernel launch per param group
(``nki_ops::adamw_``), for parameters on the neuron device."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


class AdamW(torch.optim.Optimizer):
    """Same arguments and state (``step``, ``exp_avg``, ``exp_avg_sq``) as ``torch.optim.AdamW`` without amsgrad,
    maximize, or complex parameters; the learning rate may change between steps (it reaches the kernel as a
    tensor, so one compiled kernel serves every step)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        if not 0.0 <= lr:
            raise ValueError(f"nki_ops.optim.AdamW: invalid learning rate {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"nki_ops.optim.AdamW: betas must be in [0, 1), got {betas}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        from .torch_ops import adamw_

        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, avgs, sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse or p.is_complex():
                    raise RuntimeError("nki_ops.optim.AdamW takes dense real parameters; use torch.optim.AdamW.")
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                params.append(p)
                grads.append(p.grad.contiguous())
                avgs.append(state["exp_avg"])
                sqs.append(state["exp_avg_sq"])
                steps.append(int(state["step"].item()))
            if not params:
                continue
            beta1, beta2 = group["betas"]
            for step in sorted(set(steps)):  # params added to a group later have their own step count
                idx = [i for i, s in enumerate(steps) if s == step]
                adamw_([params[i] for i in idx], [grads[i] for i in idx], [avgs[i] for i in idx],
                       [sqs[i] for i in idx], float(group["lr"]), beta1, beta2, group["eps"],
                       group["weight_decay"], step)
        return loss
