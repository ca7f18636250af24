"""The two kinds of piece a compiled graph runs, and how a lowered one is built.

A ``LoweredPiece`` is one StableHLO program: on the sim it runs on XLA:CPU directly on the device buffers
(host views in, XLA's output buffers adopted as neuron tensors out: no copies); an ``EagerPiece`` runs its
ATen ops on the device one by one, exactly as eager mode would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from .. import _env, fp64_rule
from ..compiler import background
from ..programs import host_bridge as dev
from ..lowering.passes import OutputLayout
from . import cross_check, debug, fx_passes, graph_cache, metrics, straight_line


class EagerPiece:
    kind = "eager"

    def __init__(self, gm: fx.GraphModule):
        self._fn = straight_line.compile_graph(gm)

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        return self._fn(ins)


class LoweredPiece:
    kind = "lowered"

    def __init__(self, executable: Any, record: graph_cache.Record, in_casts: list[int],
                 out_casts: list[tuple[int, torch.dtype]], out_meta: list[Any], restride: frozenset[int] = frozenset(),
                 event: dev.ProgramEvent | None = None):
        self.executable = executable
        self.event = event
        self.record = record
        self._constants: dict[torch.device, list[torch.Tensor]] = {}
        self._in_casts = in_casts
        self._out_casts = out_casts
        # XLA returns dense row-major buffers. An output an eager piece reads is given its traced strides (a
        # transposed view, a channels-last result): eager ops such as view() may rely on them. Everything
        # else stays dense: lowered pieces are value-semantic, and a copy per call would cost more than it buys.
        self._restride = [(i, tuple(int(d) for d in m.shape), tuple(int(d) for d in m.stride()))
                          for i, m in enumerate(out_meta)
                          if i in restride and isinstance(m, torch.Tensor) and m.numel() > 1
                          and not m.is_contiguous() and torch._prims_common.is_non_overlapping_and_dense_or_false(m)]
        self._layout = OutputLayout(record.out_spec, record.out_slots)
        # torch-mlir's StableHLO has no unsigned integers and may widen an empty result's type (uint64 comes
        # back as int64, an empty uint8 reserve as int32): the traced dtype is restored, bit for bit where the
        # width matches
        self._retype = [(i, m.dtype) for i, m in enumerate(out_meta)
                        if isinstance(m, torch.Tensor) and not (m.is_floating_point() or m.is_complex())]

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        device = dev.device_of_inputs(ins)
        consts = self._constants.get(device)
        if consts is None:
            consts = self._constants[device] = [c.to(device) for c in self.record.constants]
        flat = fx_passes.cast_inputs(ins, self._in_casts) + consts
        results = dev.execute(self.executable, flat, device, self.record.mutated, write_back=ins, event=self.event)
        out = fx_passes.cast_outputs(list(self._layout.rebuild(results)), self._out_casts)
        for i, dtype in self._retype:
            t = out[i]
            if isinstance(t, torch.Tensor) and t.dtype != dtype and not (t.is_floating_point() or t.is_complex()):
                out[i] = t.view(dtype) if t.dtype.itemsize == dtype.itemsize else t.to(dtype)
        for i, shape, stride in self._restride:
            t = torch.empty_strided(shape, stride, dtype=out[i].dtype, device=out[i].device)
            out[i] = t.copy_(out[i])
        return tuple(out)


def _example(v: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A CPU stand-in for a piece input: sizes, strides and dtype of the traced value, no data."""
    # int(): graphs AOTAutograd compiles later (the backward) carry sizes as SymInts with fixed values
    return torch.empty_strided(tuple(int(s) for s in v.shape), tuple(int(s) for s in v.stride()),
                               dtype=dtype or v.dtype, device="cpu")


def _moves_data_only(gm: fx.GraphModule) -> bool:
    """Every op of the piece only moves data (``fp64_rule.DATA_MOVEMENT_OPS``): its float64 values keep every
    bit, as the same ops do in eager mode."""
    ops = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    if any(isinstance(v, torch.Tensor) and v.dtype == torch.complex128
           for n in gm.graph.nodes for v in [n.meta.get("val")]):
        # torch-mlir's importer has no complex128: such a piece moves complex64 values (exact from float32, the
        # imaginary halves of a real-to-complex cast are zeros); a float64 real part is rounded, as in math ops
        return False
    return all(isinstance(op, torch._ops.OpOverload) and fp64_rule.is_exempt(op.name()) for op in ops)


def lower_piece(sub: fx.GraphModule, compile_target: str, dump: Callable[[str, str | bytes], None],
                restride: frozenset[int] = frozenset()) -> Any:
    """Lower one piece: graph cache (FX key) → else trace + torch-mlir; then the executable cache."""
    from ..compiler import driver

    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    out_node = next(n for n in reversed(sub.graph.nodes) if n.op == "output")
    out_meta = [n.meta.get("val") for n in out_node.args[0]]
    emulate = fp64_rule.emulated() and not _moves_data_only(sub)
    in_casts, out_idx = fx_passes.emulate_fp64(sub) if emulate else ([], [])
    out_casts = [(i, out_meta[i].dtype) for i in out_idx]
    fx_passes.devices_to_cpu(sub)
    examples = []
    for i, ph in enumerate(placeholders):
        val = ph.meta["val"]
        examples.append(_example(val, fx_passes.emulated(val.dtype) if i in in_casts else None))
    dump("fx_graph.py", sub.code)
    k = graph_cache.key(sub, examples, f"fp64={'emulate' if emulate else 'native'};target={compile_target}")
    record = graph_cache.load(k)
    if record is not None:
        metrics.add("cache_hits")
    else:
        from ..lowering.trace import trace

        t0 = time.perf_counter()
        tg = trace(sub, tuple(examples))
        metrics.add_phase("torch_mlir", tg.mlir_seconds)
        metrics.add_phase("lowering", time.perf_counter() - t0 - tg.mlir_seconds)
        record = graph_cache.Record(tg.stablehlo, tg.mutated_inputs, tg.out_layout.spec, tg.out_layout.slots,
                                    tg.constants)
        graph_cache.store(k, record)
    dump("module.stablehlo.mlir", record.stablehlo)
    ops = sum(1 for n in sub.graph.nodes if n.op == "call_function")
    event = dev.ProgramEvent(f"neuron::graph {k[2:10]} ({ops} ops)", sub)

    def stablehlo_program(exe: Any) -> LoweredPiece:
        debug.dump_executable(dump, exe)
        return LoweredPiece(exe, record, in_casts, out_casts, out_meta, restride, event)

    executor = sim_executor() if compile_target == "sim" else "xla"
    if executor == "xla":
        # compiled now: a module XLA or neuronx-cc rejects makes its op eager (Program repartitions)
        with metrics.timed_phase("executable"):
            return stablehlo_program(driver.compile(record.stablehlo, target=compile_target, kind="graph"))
    if executor == "inductor":
        from .inductor_executor import InductorPiece

        fast: Any = InductorPiece(sub, examples, in_casts, out_casts)
    else:
        from .aten_executor import AtenPiece

        fast = AtenPiece(sub, in_casts, out_casts, record.mutated, out_meta, restride, event)
    checks = cross_check.checks_per_piece()
    passed_key = f"ck{executor}-{k[2:]}"
    remembered = checks > 0 and not _env.get(_env.DEBUG_DIR) and graph_cache.has_marker(passed_key)
    if checks == 0 or remembered:  # passed in an earlier process: the same program, lowering and executor
        return fast
    name = f"{event.name}: {_ops_of(sub)}"
    # an output straight from empty() has no defined values: the check compares its shape and dtype only
    undefined = [k for k, n in enumerate(out_node.args[0])
                 if isinstance(n, fx.Node) and n.op == "call_function" and n.target in _UNINITIALIZED]
    dtypes = {n.meta["val"].dtype for n in sub.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}
    # the reference runs once: compiled for compile speed, not run speed, beside the lowering of the next pieces
    compiling = background.submit(lambda: _compile_check(record.stablehlo, compile_target))

    def reference() -> LoweredPiece:
        return stablehlo_program(compiling.result())

    return cross_check.CheckedPiece(fast, reference, name, list(record.mutated), checks,
                                    cross_check.tolerance(dtypes), _FAST_NAMES[executor], undefined,
                                    on_passed=lambda: graph_cache.put_marker(passed_key))


_EXECUTORS = ("aten", "xla", "inductor")
_UNINITIALIZED = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
                  torch.ops.aten.empty_like.default, torch.ops.aten.new_empty.default,
                  torch.ops.aten.new_empty_strided.default, torch.ops.aten.empty_permuted.default}
_FAST_NAMES = {"aten": "PyTorch's CPU kernels", "inductor": "inductor's CPU code"}


def _compile_check(stablehlo: str, compile_target: str) -> Any:
    from ..compiler import driver

    # on the worker (it runs before the piece's check task, FIFO) its time is off the critical path; asked for
    # before the worker reached it (TORCHNEURON_COMPILE_CHECK=every), the caller waits for it
    phase = "check_background" if background.on_worker() else "executable"
    with metrics.timed_phase(phase):
        return driver.compile(stablehlo, target=compile_target, kind="check")


def sim_executor() -> str:
    """``TORCHNEURON_SIM_EXECUTOR``: what runs a lowered piece on the simulator."""
    name = _env.get(_env.SIM_EXECUTOR).strip().lower() or "aten"
    if name not in _EXECUTORS:
        raise ValueError(f"{_env.SIM_EXECUTOR}={name!r}: expected one of {', '.join(_EXECUTORS)}")
    return name


def _ops_of(sub: fx.GraphModule, limit: int = 8) -> str:
    names = sorted({str(n.target).split(".")[-2] if "." in str(n.target) else str(n.target)
                    for n in sub.graph.nodes if n.op == "call_function"})
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
