"""The callable AOTAutograd gets back for one graph (forward, backward or inference).

Neuron programs are static-shape. A graph Dynamo traced with static shapes is built once, at compile time. A
graph with symbolic sizes (``dynamic=True``, or Dynamo's automatic dynamic shapes after a recompile) is
specialised per concrete input shape at call time: each new shape builds (or fetches from the caches) one
static program, counted in ``recompiles``; optional buckets bound how many (``options.py``).
"""

from __future__ import annotations

import time
import warnings

import torch
import torch.fx as fx

from ..lowering import auto_cast
from ..lowering.tracing_lock import fx_tracing
from . import cross_check, debug, hf_generate, metrics, options
from .host_scalars import HostScalars
from .program import Program

_warned_dynamic = False


def _is_symbolic(v) -> bool:
    if isinstance(v, torch.SymInt):
        return True
    return isinstance(v, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in v.shape)


def _compile_target() -> str:
    """``sim`` (XLA:CPU) on the simulator; on a Trn host (the ``nrt`` runtime) the instance's target, so pieces
    become NEFFs from neuronx-cc at ``-O2`` (the graph opt level), run by that runtime."""
    from .. import targets
    from ..compiler.neff import on_nrt

    return targets.current().name if on_nrt() else "sim"


class CompiledGraph:
    def __init__(self, gm: fx.GraphModule, example_inputs: list, kind: str):
        # AOTAutograd passes the argument list itself, which we clear to free inputs early. An instance
        # attribute: the wrappers AOTAutograd puts around the backward copy __dict__, not the class.
        self._boxed_call = True
        self.gm, self.kind = gm, kind
        self.name = f"the {kind} graph"
        self._programs: dict[tuple, Program] = {}
        self._dynamic = any(_is_symbolic(v) for v in example_inputs)
        self._static: Program | None = None
        out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        out_vals = [n.meta.get("val") if isinstance(n, fx.Node) else None for n in out_node.args[0]]
        self._bucketer = options.Bucketer(example_inputs, out_vals, enabled=kind == "inference")
        self._host = HostScalars(gm, example_inputs) if self._dynamic else None
        if not self._dynamic:
            self._static = self._build(gm)
        elif not self._host.only_scalars(example_inputs):  # only host-only ints: one program, nothing to say
            _warn_dynamic_once()

    def _build(self, gm: fx.GraphModule) -> Program:
        # Auto-cast (compile_options(auto_cast=...)): on the simulator, round the FP32 operands neuronx-cc would
        # cast, before partitioning, so every executor (XLA, ATen, Inductor) computes with the hardware's
        # operand values; on a Trn host neuronx-cc casts them itself (the setting is on its command line).
        gm = auto_cast.emulate(gm) if _compile_target() == "sim" else gm
        dump = debug.graph_dumper(self.kind)
        dump("", "aot_graph.py", gm.code)
        t0 = time.perf_counter()
        try:
            # Lowering traces each piece afresh with its own static fake tensors: outside the tracing context
            # and fake mode AOTAutograd compiles in (their ShapeEnv would make the sizes symbolic again).
            from torch._guards import tracing
            from torch._subclasses.fake_tensor import unset_fake_temporarily

            with tracing(None), unset_fake_temporarily():
                program = Program(gm, self.name, _compile_target(), dump)
        finally:
            metrics.add("compile_seconds", time.perf_counter() - t0)
        metrics.add("graphs_compiled")
        return program

    def __call__(self, args: list) -> list:
        cross_check.raise_found()  # a mismatch an earlier call's background check found
        program = self._static
        if program is None:
            host = self._host.outputs(args)  # before _specialised clears args
            program, args, unpad = self._specialised(args)
            out = unpad(program.run(args))
            for j, v in host:
                out[j] = v
            return out
        out = program.run(args)
        args.clear()
        return out

    def _specialised(self, args: list):
        padded, unpad = self._bucketer.pad(list(args))
        padded = self._host.to_program_args(padded)  # ints the program reads as values: 0-d tensors
        key = self._host.key(padded)
        program = self._programs.get(key)
        if program is None:
            with fx_tracing():  # also makes threads meeting a new shape together build its program once
                program = self._programs.get(key)
                if program is None:
                    from torch.fx.experimental.proxy_tensor import make_fx

                    concrete = make_fx(self._host.program_gm, tracing_mode="fake")(*padded)
                    if self._programs:
                        metrics.add("recompiles")
                    program = self._programs[key] = self._build(concrete)
        args.clear()
        return program, padded, unpad


def _warn_dynamic_once() -> None:
    global _warned_dynamic
    if not _warned_dynamic:
        _warned_dynamic = True
        warnings.warn(
            "torch.compile(backend='neuron'): the graph has dynamic shapes, but Neuron programs are static-shape: "
            "one program is compiled per distinct input shape (counted as recompiles in "
            "torch.neuron.get_dynamo_metrics()). To bound the number of programs, pad variable dimensions to a "
            "few sizes: torchneuron.compile_options(buckets={...}).", stacklevel=3)


hf_generate.install()  # at import: torch.compile(backend="neuron") looks the backend up before tracing
