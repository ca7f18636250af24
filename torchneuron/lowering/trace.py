"""Python callable / nn.Module / GraphModule → a prepared core-ATen FX graph, and its StableHLO.

- Parameters and buffers of a module become leading graph inputs (never constants in the IR), so the
  compiled program is independent of the weight values; tensor constants captured by the function are lifted
  to trailing inputs.
- Tracing uses fake tensors, so it never touches device memory and needs no Trn host.
- The graph is functionalized: an in-place update of an input (``x.add_(1)``, a BatchNorm running-stat
  update) becomes an extra output that the caller writes back (``TracedGraph.mutated_inputs``).
- If torch-mlir reports an op it cannot legalize and PyTorch has a decomposition for it, the function is
  traced again with that decomposition added (at most a few rounds).
"""

from __future__ import annotations

import time

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from . import passes
from .decompositions import neuron_decompositions, on_demand
from .errors import LoweringError
from .tracing_lock import fx_tracing
from .fx_to_stablehlo import StableHLOLoweringError, TensorSpec, to_stablehlo

_MAX_DECOMP_ROUNDS = 4


@dataclass
class TracedGraph:
    gm: fx.GraphModule
    inputs: list[TensorSpec]          # every module argument, in order: params, user tensors, constants
    param_names: list[str]            # the first len(param_names) inputs are these module attributes
    user_in_spec: pytree.TreeSpec     # (args, kwargs) structure of the user inputs
    user_tensor_slots: list[int]      # leaf indices of user inputs that are tensors (others are baked in)
    user_static: list[Any]            # the baked-in non-tensor leaves (None where the leaf is a tensor)
    constants: list[torch.Tensor]     # lifted tensor constants (trailing inputs)
    mutated_inputs: list[int]         # argument index each trailing "mutation" output writes back to
    out_layout: passes.OutputLayout   # rebuilds the user's output structure from the non-mutation outputs
    stablehlo: str = ""
    extra_decompositions: list[str] = field(default_factory=list)
    mlir_seconds: float = 0.0         # of the trace, the time torch-mlir took (import, FX import, lowering)


def _fake_like(t: torch.Tensor) -> torch.Tensor:
    """A CPU stand-in with the example's sizes and strides (graphs from AOTAutograd ``view`` saved tensors
    assuming their strides); the IR itself is value-semantic, so strides never reach it."""
    return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="cpu")


def _make_fx(fn, flat_fakes: list[torch.Tensor], table: dict) -> fx.GraphModule:
    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        with fx_tracing():
            return make_fx(torch.func.functionalize(fn, remove="mutations"),
                           decomposition_table=table, tracing_mode="fake",
                           _allow_non_fake_inputs=True)(*flat_fakes)
    except Exception as e:
        name = type(e).__name__
        if "DataDependent" in name or "data-dependent" in str(e) or "GuardOnDataDependent" in name:
            raise LoweringError(
                f"cannot lower: the function's output shape or control flow depends on tensor values "
                f"({name}: {str(e).splitlines()[0]}). Neuron graphs are static-shape; move value-dependent "
                "code (nonzero, masked_select, .item() branches) out of the lowered function.") from None
        if "DynamicOutputShape" in name:
            raise LoweringError(f"cannot lower an op with a data-dependent output shape ({e}); Neuron graphs "
                                "are static-shape — keep it outside the lowered function") from None
        raise


def trace(fn_or_module: Any, args: tuple, kwargs: dict | None = None) -> TracedGraph:
    """Trace to a prepared graph and lower it to StableHLO (``TracedGraph.stablehlo``)."""
    kwargs = kwargs or {}
    is_module = isinstance(fn_or_module, torch.nn.Module) and not isinstance(fn_or_module, fx.GraphModule)
    module = fn_or_module if is_module else None
    named: list[tuple[str, torch.Tensor]] = []
    if module is not None:
        seen: set[int] = set()
        for name, t in [*module.named_parameters(), *module.named_buffers()]:
            if id(t) not in seen:
                seen.add(id(t))
                named.append((name, t))
    leaves, in_spec = pytree.tree_flatten((args, kwargs))
    tensor_slots = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    static = [None if isinstance(v, torch.Tensor) else v for v in leaves]
    n_params = len(named)

    def flat_fn(*flat: torch.Tensor):
        params = flat[:n_params]
        user = list(static)
        for slot, t in zip(tensor_slots, flat[n_params:]):
            user[slot] = t
        a, kw = pytree.tree_unflatten(user, in_spec)
        if module is None:
            return fn_or_module(*a, **kw)
        return torch.func.functional_call(module, {n: p for (n, _), p in zip(named, params)}, tuple(a), kw)

    flat_real = [t for _, t in named] + [leaves[i] for i in tensor_slots]
    fakes = [_fake_like(t) for t in flat_real]
    table = dict(neuron_decompositions())
    extra: list[str] = []
    first_error: StableHLOLoweringError | None = None
    mlir_seconds = 0.0
    for _ in range(_MAX_DECOMP_ROUNDS + 1):
        try:
            with torch.no_grad() if module is not None else _null():
                gm = _make_fx(flat_fn, fakes, table)
        except Exception:
            if first_error is not None:  # a decomposition tried on demand does not trace: report the real cause
                raise first_error from None
            raise
        prepared = passes.run_pipeline(gm)
        t0 = time.perf_counter()
        try:
            text = to_stablehlo(gm)
        except StableHLOLoweringError as e:
            mlir_seconds += time.perf_counter() - t0
            more = on_demand(e.mlir_op) if e.mlir_op else {}
            more = {k: v for k, v in more.items() if k not in table}
            if not more:  # the failing op is not named (or has no decomposition): decompose what the graph has
                more = {k: v for op in _graph_ops(gm)
                        for k, v in on_demand(f"torch.aten.{op._overloadpacket.__name__}").items()
                        if k not in table}
            if not more:
                raise (first_error or e) from None
            first_error = first_error or e
            table.update(more)
            extra.append(e.mlir_op or "")
            continue
        mlir_seconds += time.perf_counter() - t0
        constants = prepared.constants
        inputs = [TensorSpec.of(t) for t in flat_real] + [TensorSpec.of(c) for c in constants]
        return TracedGraph(gm, inputs, [n for n, _ in named], in_spec, tensor_slots, static, constants,
                           prepared.mutated_inputs, prepared.layout, text, extra, mlir_seconds)
    raise LoweringError(f"lowering did not converge after decomposing {', '.join(extra)}")


def _graph_ops(gm: fx.GraphModule) -> list[torch._ops.OpOverload]:
    return [n.target for n in gm.graph.nodes
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)]


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
