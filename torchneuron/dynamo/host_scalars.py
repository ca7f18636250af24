"""Symbolic ints a graph only does integer arithmetic on: computed on the host, not compiled into programs.

A dynamic graph is specialised per concrete input (``compiled_graph.py``), and a SymInt input is part of that
key. But Dynamo also lifts Python ints that merely change from step to step: Hugging Face's sliding-window
cache keeps its length in ``StaticSlidingWindowLayer.cumulative_length_int`` and ``update`` does
``self.cumulative_length_int += 1``, so the graph takes the int and returns ``s + 1`` (the new attribute value)
without any tensor reading it. Keyed on its value, every decode step built a new static program.

Such an int is *host-only* when its symbol is in no input tensor's size or stride and nothing but Python-level
scalar arithmetic (``operator.add``, ``torch.sym_max``, ...) reads it, transitively; no ATen op does. Then no
tensor the program computes depends on it: the program is built once (from whichever value came first), the
int leaves the key, and the graph outputs derived from it are recomputed in Python on every call from the
actual values. A SymInt that an ATen op reads (a size, an index, a scalar operand) keeps specialising.
"""

from __future__ import annotations

import torch
import torch.fx as fx


def _symbols(v) -> set:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return set(v.node.expr.free_symbols)
    if isinstance(v, torch.Tensor):
        out: set = set()
        for s in (*v.shape, *v.stride(), v.storage_offset()):
            if isinstance(s, torch.SymInt):
                out |= s.node.expr.free_symbols
        return out
    return set()


def _is_scalar_op(n: fx.Node) -> bool:
    """A node computing a Python scalar from scalars (SymInt arithmetic Dynamo recorded), not an ATen op."""
    if n.op != "call_function" or isinstance(n.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return False
    val = n.meta.get("val")
    return isinstance(val, (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool))


class HostScalars:
    """Which inputs of a dynamic graph are host-only ints, and how to recompute the outputs they feed."""

    def __init__(self, gm: fx.GraphModule, example_inputs: list):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        candidates: dict[int, fx.Node] = {}
        pinned: set = set()  # symbols some tensor input's size or stride holds, or a non-host-only input
        for i, (ph, v) in enumerate(zip(placeholders, example_inputs)):
            if isinstance(v, torch.SymInt) and v.node.expr.is_Symbol:
                candidates[i] = ph
            else:
                pinned |= _symbols(v)
        # the nodes each candidate reaches; it is host-only if all of them are scalar ops (or the output)
        self.indices: list[int] = []
        self._nodes: list[fx.Node] = []   # scalar-op nodes to evaluate, in graph order
        reached: set[fx.Node] = set()
        for i, ph in candidates.items():
            if _symbols(example_inputs[i]) & pinned:
                continue
            closure, todo, ok = {ph}, list(ph.users), True
            while todo and ok:
                n = todo.pop()
                if n is out_node or n in closure:
                    continue
                ok = _is_scalar_op(n)
                closure.add(n)
                todo.extend(n.users)
            if ok:
                self.indices.append(i)
                reached |= closure
        self._placeholders = placeholders
        self._nodes = [n for n in gm.graph.nodes if n in reached and n.op == "call_function"]
        # every input a scalar op reads must be available on the host: a host-only int or a plain constant
        host = {placeholders[i] for i in self.indices} | set(self._nodes)
        for n in self._nodes:
            if any(a not in host for a in n.all_input_nodes):
                self.indices, self._nodes = [], []  # mixed with other inputs: keep specialising (rare)
                break
        outs = out_node.args[0] if isinstance(out_node.args[0], (tuple, list)) else ()
        self._outputs = [(j, o) for j, o in enumerate(outs) if isinstance(o, fx.Node) and o in host]
        self.program_gm = self._without_host_outputs(gm) if self._outputs else gm

    def _without_host_outputs(self, gm: fx.GraphModule) -> fx.GraphModule:
        """``gm`` returning None where it returned a host-only value: the scalar ops leave the program (they
        would be eager pieces there) and run in ``outputs`` instead."""
        graph = fx.Graph()
        env: dict[fx.Node, fx.Node] = {}
        out = graph.graph_copy(gm.graph, env)
        skip = {j for j, _ in self._outputs}
        graph.output(type(out)(None if j in skip else o for j, o in enumerate(out)))
        graph.eliminate_dead_code()
        return fx.GraphModule(gm, graph)

    def __bool__(self) -> bool:
        return bool(self.indices)

    def only_scalars(self, example_inputs: list) -> bool:
        """Whether every symbolic input is host-only: the graph then builds one static program."""
        skip = set(self.indices)
        return not any(_symbols(v) for i, v in enumerate(example_inputs) if i not in skip)

    def key(self, args: list) -> tuple:
        """The program key: input shapes and the values of the ints that are not host-only."""
        skip = set(self.indices)
        return tuple(None if i in skip else tuple(a.shape) if isinstance(a, torch.Tensor) else a
                     for i, a in enumerate(args))

    def outputs(self, args: list) -> list[tuple[int, object]]:
        """(output index, value) for the outputs computed from host-only ints, from this call's ``args``."""
        if not self._outputs:
            return []
        env = {self._placeholders[i]: args[i] for i in self.indices}
        for n in self._nodes:
            a, kw = fx.node.map_arg((n.args, n.kwargs), lambda x: env[x])
            env[n] = n.target(*a, **kw)
        return [(j, env[o]) for j, o in self._outputs]
