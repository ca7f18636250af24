"""ATen-level FX graphs for the estimator: traced from a function or module with fake tensors (no device
needed, nothing computed), or taken as they are (a compiled graph piece), and read op by op."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch.utils import _pytree as pytree

from .cost import OpEstimate, op_cost
from .machine import Machine
from .op_work import DMA, TENSOR, TensorMeta, base_name, exact_flops, is_view


def trace(fn: Any, args: tuple, kwargs: dict) -> fx.GraphModule:
    """``fn(*args, **kwargs)`` as an ATen graph. A module's parameters and buffers become graph inputs, so
    their bytes count as data the program reads."""
    from torch.fx.experimental.proxy_tensor import make_fx

    if isinstance(fn, torch.nn.Module):
        module = fn
        state = {**dict(module.named_parameters()), **dict(module.named_buffers())}

        def call(state, args, kwargs):
            return output_tensors(torch.func.functional_call(module, state, args, kwargs))

        return make_fx(call, tracing_mode="fake")(state, args, kwargs)
    if not callable(fn):
        raise TypeError(f"torchneuron.estimate: expected a function or an nn.Module, got {type(fn).__name__}")

    def call_fn(args, kwargs):
        return output_tensors(fn(*args, **kwargs))

    return make_fx(call_fn, tracing_mode="fake")(args, kwargs)


def output_tensors(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors a call returns, wherever they sit: in pytrees, or in objects such as a KV cache
    (a graph can only return tensors)."""
    out: list[torch.Tensor] = []
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.Tensor):
            out.append(leaf)
        elif depth < 3 and hasattr(leaf, "__dict__") and not isinstance(leaf, type):
            out.extend(output_tensors(list(vars(leaf).values()), depth + 1))
    return out


@dataclass
class GraphCost:
    ops: list[OpEstimate]
    compulsory_bytes: int  # graph inputs read, outputs written, inputs updated in place
    fused_bytes: int       # HBM traffic of the graph compiled as one program


def _metas(value: Any) -> list[TensorMeta]:
    return [TensorMeta.of(v) for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _val(a: Any) -> Any:
    return a.meta.get("val") if isinstance(a, fx.Node) else a


def _root(node: fx.Node) -> fx.Node:
    """The value a chain of views starts from."""
    while node.op == "call_function" and is_view(str(node.target)) and node.args and isinstance(node.args[0], fx.Node):
        node = node.args[0]
    return node


def graph_cost(gm: fx.GraphModule, m: Machine) -> GraphCost:
    ops: list[OpEstimate] = []
    nbytes_of: dict[fx.Node, int] = {}
    cost_of: dict[fx.Node, OpEstimate] = {}
    compulsory = 0
    spilled = 0
    mutated: set[fx.Node] = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if node.users:
                compulsory += sum(t.nbytes for t in _metas(node.meta.get("val")))
            continue
        if node.op == "output":
            compulsory += sum(t.nbytes for t in _metas(pytree.tree_map(_val, node.args[0])))
            continue
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        args, kwargs = pytree.tree_map(_val, (node.args, node.kwargs))
        out = node.meta.get("val")
        ins, outs = _metas((args, kwargs)), _metas(out)
        name = str(node.target)
        est = op_cost(name, ins, outs, m, flops=exact_flops(node.target, args, kwargs, out))
        ops.append(est)
        if base_name(name).endswith("_") and node.args and isinstance(node.args[0], fx.Node):
            root = _root(node.args[0])
            if root.op == "placeholder" and root not in mutated:
                mutated.add(root)
                compulsory += sum(t.nbytes for t in _metas(root.meta.get("val")))
        if est.bound != "-":
            nbytes_of[node] = sum(t.nbytes for t in outs)
            cost_of[node] = est
    # Elementwise work streams tile by tile, so its intermediates never leave SBUF. An intermediate too big
    # for SBUF that a matmul or a data-movement op consumes whole is written to HBM and read back.
    for node, size in nbytes_of.items():
        if size > m.sbuf_bytes // 4 and any(_needs_whole(cost_of.get(_consumer(u))) for u in node.users):
            spilled += 2 * size
    return GraphCost(ops, compulsory, compulsory + spilled)


def _consumer(node: fx.Node) -> fx.Node:
    """The op that reads a value through views of it."""
    while is_view(str(node.target)) and len(node.users) == 1:
        node = next(iter(node.users))
    return node


def _needs_whole(est: OpEstimate | None) -> bool:
    return est is not None and (est.engines.get(TENSOR, 0.0) > 0 or est.engines.get(DMA, 0.0) > 0)
