"""``torchneuron.estimate`` (this package, ``torchneuron.estimator``): how long a call would take on a
Trainium device, without one.

    est = torchneuron.estimate(model, x, target="trn2")
    print(est)                      # per-op table, eager and compiled totals, roofline
    est.total_us, est.compiled_us, est.roofline_us, est.fraction_of_peak

The call is traced to ATen ops with fake tensors (nothing runs, inputs may be CPU, meta or neuron tensors)
and each op is costed by an op-level roofline model of one logical NeuronCore (``machine.py``, ``cost.py``).
"""

from __future__ import annotations

from typing import Any

import torch

from .cost import OpEstimate, Totals, eager_totals, fused_totals, roofline_ns
from .graph import GraphCost, graph_cost, trace
from .machine import Machine, machine
from .result import Estimate

__all__ = ["Estimate", "Machine", "OpEstimate", "Totals", "estimate", "estimate_graph", "machine"]


def estimate(fn_or_module: Any, *inputs: Any, target: str | None = None, mode: str = "eager",
             **kwargs: Any) -> Estimate:
    """Estimated Trainium time of ``fn_or_module(*inputs, **kwargs)`` on one neuron device of ``target``
    (trn1, trn2 or trn3; default ``TORCHNEURON_TARGET``). ``mode`` picks which total ``total_us`` reports:
    ``"eager"`` (every op its own kernel, as ``model.to("neuron")`` runs) or ``"compiled"`` (one fused
    program, as ``torch.compile(backend="neuron")`` runs); both are always computed."""
    if mode not in ("eager", "compiled"):
        raise ValueError(f"torchneuron.estimate: mode must be 'eager' or 'compiled', got {mode!r}")
    gm = trace(fn_or_module, inputs, kwargs)
    return estimate_graph(gm, target=target, mode=mode)


def estimate_graph(gm: torch.fx.GraphModule, *, target: str | None = None, mode: str = "compiled") -> Estimate:
    """The estimate of an ATen-level FX graph whose nodes carry ``meta["val"]`` (a traced or compiled graph)."""
    m = machine(target)
    cost: GraphCost = graph_cost(gm, m)
    peak = roofline_ns(cost.ops, 0, m)
    return Estimate(
        target=m.target,
        mode=mode,
        ops=cost.ops,
        eager=eager_totals(cost.ops),
        compiled=fused_totals(cost.ops, cost.fused_bytes, m),
        roofline_ns=roofline_ns(cost.ops, cost.compulsory_bytes, m),
        flops=sum(op.flops for op in cost.ops),
        peak_tensor_ns=peak,
    )
