"""Symbolic ints a graph only computes with: kept out of the program key instead of one program per value.

A dynamic graph is specialised per concrete input (``compiled_graph.py``), and a SymInt input is part of that
key. But Dynamo also lifts Python ints that merely change from step to step: Hugging Face's sliding-window
cache keeps its length in ``StaticSlidingWindowLayer.cumulative_length_int`` and ``update`` does
``self.cumulative_length_int += 1``, so the graph takes the int and returns ``s + 1`` (the new attribute value)
without any tensor reading it. Keyed on its value, every decode step built a new static program.

An int whose symbol is in no input tensor's size or stride leaves the key when everything that reads it,
transitively, is

- Python-level scalar arithmetic (``operator.add``, ``torch.sym_max``, ...) ending in graph outputs: those
  outputs are recomputed on the host on every call from the actual value, and leave the program; or
- the second operand of an elementwise op (``x * n``, ``x + (n - 2)``, ``x < n``): the program takes the int as
  a 0-d int64 tensor input (``runtime``), which gives the same result dtype as the Python int (a 0-d operand
  of the same category does not promote a dimensioned tensor). Shapes stay static.

An int read any other way (a size, an index, a shift, a factory's fill value) keeps specialising.
"""

from __future__ import annotations

import operator

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


_aten = torch.ops.aten
# elementwise ops whose second operand may be a 0-d tensor instead of a Python int with the same result dtype
# (same-category 0-d operands do not promote a dimensioned one); Scalar overloads move to their Tensor twin
_VALUE_OPS = {op: op for op in (_aten.add.Tensor, _aten.sub.Tensor, _aten.mul.Tensor, _aten.div.Tensor,
                                _aten.eq.Tensor, _aten.ne.Tensor, _aten.lt.Tensor, _aten.le.Tensor,
                                _aten.gt.Tensor, _aten.ge.Tensor)}
_VALUE_OPS.update({_aten.add.Scalar: _aten.add.Tensor, _aten.sub.Scalar: _aten.sub.Tensor,
                   _aten.mul.Scalar: _aten.mul.Tensor, _aten.div.Scalar: _aten.div.Tensor,
                   _aten.eq.Scalar: _aten.eq.Tensor, _aten.ne.Scalar: _aten.ne.Tensor,
                   _aten.lt.Scalar: _aten.lt.Tensor, _aten.le.Scalar: _aten.le.Tensor,
                   _aten.gt.Scalar: _aten.gt.Tensor, _aten.ge.Scalar: _aten.ge.Tensor})
# scalar arithmetic that traces the same on a 0-d tensor (on the way from the int to a value operand)
_TENSOR_SAFE = {operator.add, operator.sub, operator.mul, operator.neg}


def _reads_as_value(user: fx.Node, v: fx.Node) -> bool:
    """``user`` takes ``v`` only as its second operand, against a tensor that keeps its dtype with a 0-d int64
    in place of the Python int (dimensioned, or floating point)."""
    if user.target not in _VALUE_OPS or len(user.args) != 2 or user.kwargs or user.args[1] is not v:
        return False
    other = user.args[0].meta.get("val") if isinstance(user.args[0], fx.Node) else None
    return isinstance(other, torch.Tensor) and (other.dim() > 0 or other.is_floating_point())


class HostScalars:
    """Which inputs of a dynamic graph are host-only ints (``indices``), which of them the program reads as a
    0-d tensor (``runtime``), and how to recompute the outputs they feed."""

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
        # the nodes each candidate reaches: scalar ops (evaluated on the host) up to the output, or up to an
        # elementwise op reading the value (then the program takes the int as a 0-d tensor); anything else
        # (a size, an index, a factory's argument) keeps the graph specialising on the value
        self.indices: list[int] = []
        self.runtime: list[int] = []
        self._value_readers: list[fx.Node] = []
        reached: set[fx.Node] = set()
        for i, ph in candidates.items():
            if _symbols(example_inputs[i]) & pinned:
                continue
            closure, todo, readers, ok = {ph}, [ph], [], True
            while todo and ok:
                v = todo.pop()
                for u in v.users:
                    if u is out_node or u in closure:
                        continue
                    if _is_scalar_op(u):
                        closure.add(u)
                        todo.append(u)
                    elif _reads_as_value(u, v):
                        readers.append(u)
                    else:
                        ok = False
                        break
            if ok and readers and any(n.target not in _TENSOR_SAFE for n in closure if n is not ph):
                ok = False  # e.g. sym_max on the way: would not trace on a tensor
            if ok:
                self.indices.append(i)
                if readers:
                    self.runtime.append(i)
                    self._value_readers += readers
                reached |= closure
        self._placeholders = placeholders
        self._nodes = [n for n in gm.graph.nodes if n in reached and n.op == "call_function"]
        # every input a scalar op reads must be available on the host: a host-only int or a plain constant
        host = {placeholders[i] for i in self.indices} | set(self._nodes)
        for n in self._nodes:
            if any(a not in host for a in n.all_input_nodes):
                self.indices, self.runtime, self._nodes = [], [], []  # mixed with other inputs (rare)
                self._value_readers = []
                break
        outs = out_node.args[0] if isinstance(out_node.args[0], (tuple, list)) else ()
        self._outputs = [(j, o) for j, o in enumerate(outs) if isinstance(o, fx.Node) and o in host]
        self.program_gm = self._program(gm) if self._outputs or self.runtime else gm

    def _program(self, gm: fx.GraphModule) -> fx.GraphModule:
        """``gm`` returning None where it returned a host-only value (the scalar ops leave the program: they
        would be eager pieces there; ``outputs`` computes them), its value readers on their Tensor overloads."""
        graph = fx.Graph()
        env: dict[fx.Node, fx.Node] = {}
        out = graph.graph_copy(gm.graph, env)
        for n in self._value_readers:
            env[n].target = _VALUE_OPS[n.target]
        skip = {j for j, _ in self._outputs}
        graph.output(type(out)(None if j in skip else o for j, o in enumerate(out)))
        graph.eliminate_dead_code()
        return fx.GraphModule(gm, graph)

    def to_program_args(self, args: list) -> list:
        """``args`` with each runtime int as a 0-d int64 tensor on the device of the graph's tensors."""
        if not self.runtime:
            return args
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        args = list(args)
        for i in self.runtime:
            args[i] = torch.tensor(int(args[i]), dtype=torch.int64, device=device)
        return args

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
