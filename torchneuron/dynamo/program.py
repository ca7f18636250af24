"""One static-shape AOT graph, partitioned, lowered and ready to run: ``Program.run(args)``.

Building: classify and schedule nodes (``partition``), lower each lowered piece (``pieces.lower_piece``); a
piece whose lowering fails on an op the coverage table did not know makes that op eager and the graph is
partitioned again. Running: pieces in order over a flat list of value slots, each value dropped after its
last use (training graphs hold activations; they must not outlive their readers).
"""

from __future__ import annotations

import functools
import operator
import warnings
from typing import Any

import torch
import torch.fx as fx

from .. import _env
from ..compiler.driver import CompileError
from ..lowering.errors import LoweringError
from . import metrics, nki_pieces, partition
from .pieces import EagerPiece, lower_piece

_MAX_REPARTITIONS = 8


class CompileFallbackWarning(UserWarning):
    """Part of a compiled graph runs eagerly on the device: its ops have no StableHLO lowering."""


class NeuronCompileError(RuntimeError):
    """torch.compile(backend="neuron") cannot compile the graph as asked (strict mode, bad input)."""


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class _PieceFailed(Exception):
    def __init__(self, spec: partition.PieceSpec, error: Exception):
        super().__init__(str(error))
        self.spec, self.error = spec, error


class Program:
    def __init__(self, gm: fx.GraphModule, name: str, compile_target: str, dump):
        self.name = name
        forced: dict[str, str] = {}
        for _ in range(_MAX_REPARTITIONS + 1):
            kinds, reasons = partition.classify(gm, forced)
            specs = partition.schedule(gm, kinds)
            _check_strict(name, reasons)
            try:
                self._build(gm, specs, compile_target, dump)
            except _PieceFailed as failed:
                why = f"its lowering failed: {str(failed.error).splitlines()[0][:200]}"
                op = _failed_op(failed.error, failed.spec)
                new = [op] if op is not None else sorted(
                    {partition.op_name(n) for n in failed.spec.nodes if n.op == "call_function"} - set(forced))
                new = [o for o in new if o not in forced]
                if not new:
                    raise failed.error from None
                forced.update(dict.fromkeys(new, why))
                continue
            break
        else:  # pragma: no cover - every round forces a new op, so the loop ends
            raise NeuronCompileError(f"{name}: partitioning did not converge")
        self.reasons = reasons
        dump("", "partition.txt", self.describe(specs, reasons))
        self._report(specs, reasons)

    def _build(self, gm: fx.GraphModule, specs: list[partition.PieceSpec], target: str, dump) -> None:
        slot: dict[fx.Node, int] = {}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for i, ph in enumerate(placeholders):
            slot[ph] = i
        constants = []  # tensors the graph holds as attributes (get_attr): fixed values in their own slots
        for n in gm.graph.nodes:
            if n.op == "get_attr":
                slot[n] = len(slot)
                constants.append((slot[n], operator.attrgetter(str(n.target))(gm)))
        for spec in specs:
            for n in spec.outputs:
                slot[n] = len(slot)
        out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        last_use: dict[int, int] = {}
        for p, spec in enumerate(specs):
            for n in spec.inputs:
                last_use[slot[n]] = p
        keep = {slot[n] for n in out_node.all_input_nodes if n in slot} | {s for s, _ in constants}
        read_eagerly = {n for spec in specs if spec.kind == partition.EAGER for n in spec.inputs}
        steps = []
        for p, spec in enumerate(specs):
            sub = partition.subgraph(gm, spec)
            if spec.kind == partition.LOWERED:
                restride = frozenset(i for i, n in enumerate(spec.outputs) if n in read_eagerly)
                try:
                    piece: Any = lower_piece(sub, target, functools.partial(dump, f"piece{p}"), restride)
                except (LoweringError, CompileError) as e:
                    raise _PieceFailed(spec, e) from e
            elif target != "sim" and nki_pieces.has_nki(sub):  # a Trn host: NKI ops become custom calls
                piece = nki_pieces.TrnNkiPiece(sub, target, functools.partial(dump, f"piece{p}"))
            else:
                piece = EagerPiece(sub)
            frees = [s for s, last in last_use.items() if last == p and s not in keep]
            steps.append((piece, [slot[n] for n in spec.inputs], [slot[n] for n in spec.outputs], frees))
        self._steps = steps
        self._constants = constants
        self._n_slots = len(slot)
        self._n_inputs = len(placeholders)
        self._outputs = fx.node.map_aggregate(out_node.args[0],
                                              lambda n: _Slot(slot[n]) if isinstance(n, fx.Node) else n)
        # AOTAutograd's graphs return a flat tuple of values: then the result is one list comprehension
        flat = isinstance(self._outputs, (tuple, list)) and all(isinstance(o, _Slot) for o in self._outputs)
        self._flat_outputs = [o.index for o in self._outputs] if flat else None
        self.n_lowered = sum(1 for s in steps if s[0].kind == "lowered")
        # a piece that only checks a program's results for errors (partition.is_host_check) is part of running
        # the program, not an op that failed to lower
        checks = sum(1 for spec in specs if spec.kind == partition.EAGER
                     and all(partition.is_host_check(n) for n in spec.nodes))
        self.n_eager = len(steps) - self.n_lowered - checks

    def run(self, args: list) -> list:
        env: list = [None] * self._n_slots
        env[: self._n_inputs] = args
        for s, value in self._constants:
            env[s] = value
        for piece, ins, outs, frees in self._steps:
            results = piece([env[i] for i in ins])
            for s, v in zip(outs, results):
                env[s] = v
            for s in frees:
                env[s] = None
        if self._flat_outputs is not None:
            return [env[i] for i in self._flat_outputs]
        return list(fx.node.map_aggregate(self._outputs, lambda o: env[o.index] if isinstance(o, _Slot) else o))

    # -- reporting ------------------------------------------------------------------------------------------
    def describe(self, specs, reasons) -> str:
        lines = [f"{self.name}: {len(specs)} piece(s)"]
        for i, spec in enumerate(specs):
            ops = sorted({partition.op_name(n) for n in spec.nodes})
            lines.append(f"  piece {i} [{spec.kind}] {len(spec.nodes)} nodes, {len(spec.inputs)} in, "
                         f"{len(spec.outputs)} out: {', '.join(ops[:12])}{' ...' if len(ops) > 12 else ''}")
        return "\n".join(lines) + "\n"

    def _report(self, specs, reasons) -> None:
        if len(specs) > 1:
            metrics.add("partitions")
        metrics.add("lowered_pieces", self.n_lowered)
        metrics.add("eager_pieces", self.n_eager)
        missing = {r.op: r for r in reasons.values() if not r.expected}  # one line per op, first site
        for r in reasons.values():
            if not r.expected:
                metrics.fallback(r.op)
        if missing:
            listed = "; ".join(f"{r.op} ({_short(r.why)}{', at ' + r.where if r.where else ''})"
                               for r in missing.values())
            warnings.warn(
                f"torch.compile(backend='neuron'): {self.name} was split into {len(specs)} pieces "
                f"({self.n_lowered} compiled, {self.n_eager} run eagerly on the device) because these ops have no "
                f"StableHLO lowering: {listed}. On a Trn host they would run on the CPU between compiled pieces. "
                f"{_env.COMPILE_FALLBACK}=error makes this an error.", CompileFallbackWarning, stacklevel=2)


def _short(why: str, limit: int = 160) -> str:
    return why if len(why) <= limit else why[: limit - 3] + "..."


def _check_strict(name: str, reasons: dict) -> None:
    if _env.get(_env.COMPILE_FALLBACK).strip().lower() != "error":
        return
    for r in reasons.values():
        if not r.expected:
            raise NeuronCompileError(
                f"torch.compile(backend='neuron'): {r.op} in {name} has no StableHLO lowering ({r.why})"
                f"{'; called at ' + r.where if r.where else ''}. {_env.COMPILE_FALLBACK}=error refuses graphs "
                "that would run part of their ops eagerly; avoid the op (or run that code outside the compiled "
                f"region with torch.compiler.disable), or unset {_env.COMPILE_FALLBACK} to run it between "
                "compiled pieces.")


def _failed_op(e: Exception, spec: partition.PieceSpec) -> str | None:
    """The ATen overload of the piece a lowering error names, if any."""
    mlir_op = getattr(e, "mlir_op", None) or getattr(e, "op", None)
    if not mlir_op:
        return None
    name = str(mlir_op).removeprefix("torch.aten.").split(".")[0]
    for n in spec.nodes:
        if isinstance(n.target, torch._ops.OpOverload):
            packet = n.target._overloadpacket.__name__
            if packet == name or packet == name.rstrip("_"):
                return n.target.name()
    return None
