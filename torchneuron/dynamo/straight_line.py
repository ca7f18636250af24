"""An FX graph as one straight-line Python function calling the ATen operators' own handles.

FX's generated ``forward`` reaches each operator through ``torch.ops.aten.<op>.<overload>`` (attribute
look-ups on every call) and calls it through ``OpOverload.__call__``, one more Python frame per node. On the
small graphs of a decode step or a small model's training step that is a fifth of the program's time (a tiny
HF Llama decode piece: 750 -> 590 us). Here each node calls ``OpOverload._op`` (what ``__call__`` calls),
bound once as a global of the generated function, and every value is dropped after its last use, as FX's
code does (training graphs hold activations that must not outlive their readers).
"""

from __future__ import annotations

import itertools
import linecache
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

_serial = itertools.count()


def compile_graph(gm: fx.GraphModule) -> Callable[[list], Any]:
    """``fn(args)`` computing ``gm(*args)``; graphs with module or method calls keep FX's own code."""
    nodes = list(gm.graph.nodes)
    if any(n.op in ("call_module", "call_method") for n in nodes):
        forward = gm.forward
        return lambda args: forward(*args)
    env: dict[str, Any] = {}
    names: dict[fx.Node, str] = {}

    def constant(value: Any) -> str:
        name = f"c{len(env)}"
        env[name] = value
        return name

    def expr(a: Any) -> str:
        if isinstance(a, fx.Node):
            return names[a]
        if isinstance(a, (list, tuple)) and any(isinstance(x, fx.Node) for x in a):
            inner = ", ".join(expr(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner},)"
        if isinstance(a, dict) and any(isinstance(x, fx.Node) for x in a.values()):
            return "{" + ", ".join(f"{constant(k)}: {expr(v)}" for k, v in a.items()) + "}"
        if isinstance(a, (list, tuple)):  # shapes, dims: built once (ATen never mutates its list arguments)
            return constant(list(a) if isinstance(a, list) else tuple(a))
        return constant(a)

    last_use: dict[fx.Node, int] = {}
    for i, n in enumerate(nodes):
        for used in n.all_input_nodes:
            last_use[used] = i
    dead_after: dict[int, list[str]] = {}
    lines = ["def run(args):"]
    placeholders = 0
    for i, n in enumerate(nodes):
        if n.op == "placeholder":
            names[n] = f"a{placeholders}"
            lines.append(f"    a{placeholders} = args[{placeholders}]")
            placeholders += 1
        elif n.op == "get_attr":
            names[n] = constant(operator.attrgetter(str(n.target))(gm))
        elif n.op == "call_function":
            target = n.target
            fn = target._op if isinstance(target, torch._ops.OpOverload) else target
            call = ", ".join([expr(a) for a in n.args] + [f"{k}={expr(v)}" for k, v in n.kwargs.items()])
            names[n] = f"v{i}"
            note = n.format_node()[:120].replace("\n", " ")
            lines.append(f"    v{i} = {constant(fn)}({call})  # {note}")
        elif n.op == "output":
            lines.append(f"    return {expr(n.args[0])}")
            continue
        if n.op != "get_attr":
            dead_after.setdefault(last_use.get(n, i), []).append(names[n])
        gone = dead_after.pop(i, None)
        if gone and n.op != "output":
            lines.append(f"    {' = '.join(gone)} = None")
    filename = f"<neuron piece {next(_serial)}>"
    source = "\n".join(lines) + "\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # readable tracebacks
    exec(compile(source, filename, "exec"), env)
    return env["run"]
