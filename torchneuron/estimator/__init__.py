"""``torchneuron.estimate`` (this package, ``torchneuron.estimator``): how long a call would take on a
Trainium device, and what it would cost, without one (docs/estimate.md).

    est = torchneuron.estimate(model, x, target="trn2", mode="compiled", auto_cast="matmult")
    print(est)                      # per-op table, eager and compiled totals, roofline, assumptions
    est.total_us, est.compiled_us, est.roofline_us, est.fraction_of_peak, est.cost("trn2.48xlarge")
    estimate_training(model, x, instance_type="trn1.32xlarge", instances=4)   # a data-parallel step

The call is traced to ATen ops with fake tensors (nothing runs, inputs may be CPU, meta or neuron tensors)
and each op is costed by a physical model of one logical NeuronCore (``machine.py``, ``op_work.py``,
``cost.py``), checked against AWS's published numbers (``calibration.py``). Modules: ``graph`` (tracing, a
program's HBM traffic), ``training`` (a step), ``collectives`` (all-reduce), ``instances`` (instance types and
rates), ``kernels`` (``@nki.jit`` kernels), ``command`` (``python -m torchneuron estimate``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from ..lowering import auto_cast as _auto_cast
from .cost import OpEstimate, Totals, eager_totals, fused_totals, roofline_ns
from .graph import GraphCost, graph_cost, trace
from .machine import Machine, machine
from .result import Estimate
from .training import TrainingEstimate, estimate_training

__all__ = ["Estimate", "Machine", "OpEstimate", "Totals", "estimate", "estimate_graph", "estimate_training",
           "machine", "TrainingEstimate"]


def estimate(fn_or_module: Any, *inputs: Any, target: str | None = None, mode: str = "eager",
             auto_cast: str | tuple[str, str] | None = None, weights: str = "inputs", **kwargs: Any) -> Estimate:
    """Estimated Trainium time of ``fn_or_module(*inputs, **kwargs)`` on one neuron device of ``target``
    (trn1, trn2 or trn3; default ``TORCHNEURON_TARGET``). ``mode`` picks which total ``total_us`` reports:
    ``"eager"`` (every op its own kernel, as ``model.to("neuron")`` runs) or ``"compiled"`` (one fused
    program, as ``torch.compile(backend="neuron")`` runs); both are always computed.

    ``auto_cast``: the compiler's auto-cast the program is priced with (``"none"``, ``"matmult"``, ``"all"``,
    with a cast type as in ``"matmult-bf16"``); default: the current ``compile_options`` setting (``none``
    unless changed). AWS's published benchmarks compile FP32 models with ``matmult-bf16``, neuronx-cc's own
    default. The estimate prints the setting it assumed.
    ``weights``: ``"inputs"`` (torch.compile: parameters are read from HBM by every call, at their dtype) or
    ``"constants"`` (``torch_neuronx.trace``-style inference: weights compiled into the program, so those that
    only auto-cast operations read are stored at the cast type's width).

    An ``@nki.jit`` kernel is priced by ``torchneuron.estimator.kernels.estimate_kernel`` (the NKI cost
    model, one launch on the inputs' shapes)."""
    if mode not in ("eager", "compiled"):
        raise ValueError(f"torchneuron.estimate: mode must be 'eager' or 'compiled', got {mode!r}")
    if type(fn_or_module).__module__.startswith("torchneuron.nki"):
        # nki sits above this package (its torch bridge prices compiled programs with it): no import of it here
        raise TypeError("torchneuron.estimate: an @nki.jit kernel is priced by the NKI cost model: use "
                        "torchneuron.estimator.kernels.estimate_kernel(kernel, *inputs, target=...)")
    gm = trace(fn_or_module, inputs, kwargs)
    est = estimate_graph(gm, target=target, mode=mode, auto_cast=auto_cast, weights=weights)
    first = next((t for t in pytree.tree_leaves((inputs, kwargs)) if isinstance(t, torch.Tensor)), None)
    est.batch = int(first.shape[0]) if first is not None and first.dim() > 0 else 1
    return est


def estimate_graph(gm: torch.fx.GraphModule, *, target: str | None = None, mode: str = "compiled",
                   auto_cast: str | tuple[str, str] | None = None, weights: str = "inputs") -> Estimate:
    """The estimate of an ATen-level FX graph whose nodes carry ``meta["val"]`` (a traced or compiled graph)."""
    m = machine(target)
    cast = _auto_cast.parse(auto_cast)
    cost: GraphCost = graph_cost(gm, m, cast, weights)
    peak = roofline_ns(cost.ops, 0, m)
    return Estimate(
        target=m.target,
        mode=mode,
        ops=cost.ops,
        eager=eager_totals(cost.ops),
        compiled=fused_totals(cost.ops, cost.op_bytes, cost.extra_bytes, m),
        roofline_ns=roofline_ns(cost.ops, cost.compulsory_bytes, m),
        flops=sum(op.flops for op in cost.ops),
        peak_tensor_ns=peak,
        auto_cast=str(cast),
        weights=weights,
    )
