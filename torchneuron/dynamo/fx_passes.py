"""Passes over one lowered piece (a GraphModule cut out of an AOT graph) before it is traced for StableHLO.

Each changes the graph in place and returns what the runner needs to know.
"""

from __future__ import annotations

import torch
import torch.fx as fx

_EMULATED = {torch.float64: torch.float32, torch.complex128: torch.complex64}


def _map_literals(node: fx.Node, fn) -> None:
    node.args = fx.node.map_aggregate(node.args, fn)
    node.kwargs = fx.node.map_aggregate(node.kwargs, fn)


def devices_to_cpu(gm: fx.GraphModule) -> None:
    """StableHLO has no devices: factory calls inside a piece (``full(..., device='neuron:0')``) are traced
    on the CPU, like the piece's inputs."""
    cpu = torch.device("cpu")

    def fix(a):
        return cpu if isinstance(a, torch.device) and a.type != "cpu" else a

    for node in gm.graph.nodes:
        if node.op == "call_function":
            _map_literals(node, fix)
    gm.recompile()


def _dtype_of(node: fx.Node) -> torch.dtype | None:
    val = node.meta.get("val")
    return val.dtype if isinstance(val, torch.Tensor) else None


def emulate_fp64(gm: fx.GraphModule) -> tuple[list[int], list[int]]:
    """NeuronCores have no float64: the piece computes in float32 (complex128 in complex64), as eager neuron
    does. Returns (inputs the runner casts down before the call, outputs it casts back up after)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    in_casts = [i for i, n in enumerate(placeholders) if _dtype_of(n) in _EMULATED]
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    outs = out_node.args[0]
    out_casts = [i for i, n in enumerate(outs) if isinstance(n, fx.Node) and _dtype_of(n) in _EMULATED]

    def fix(a):
        return _EMULATED.get(a, a) if isinstance(a, torch.dtype) else a

    for node in gm.graph.nodes:
        if node.op == "call_function":
            _map_literals(node, fix)
    gm.recompile()
    return in_casts, out_casts


def emulated(dtype: torch.dtype) -> torch.dtype:
    return _EMULATED.get(dtype, dtype)


def cast_inputs(ins: list, in_casts: list[int]) -> list:
    """The inputs ``emulate_fp64`` named, cast down (the others as they are)."""
    if not in_casts:
        return ins
    ins = list(ins)
    for i in in_casts:
        ins[i] = ins[i].to(emulated(ins[i].dtype))
    return ins


def cast_outputs(outs: list, out_casts: list[tuple[int, torch.dtype]]) -> list:
    """The outputs ``emulate_fp64`` named, cast back up to their traced dtype."""
    for i, dtype in out_casts:
        outs[i] = outs[i].to(dtype)
    return outs
