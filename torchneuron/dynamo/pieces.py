"""The two kinds of piece a compiled graph runs, and how a lowered one is built.

A ``LoweredPiece`` is one StableHLO program: on the sim it runs on XLA:CPU directly on the device buffers
(host views in, XLA's output buffers adopted as neuron tensors out: no copies); an ``EagerPiece`` runs its
ATen ops on the device one by one, exactly as eager mode would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from .. import _env
from ..lowering import device as dev
from . import debug, fx_passes, graph_cache, metrics


class EagerPiece:
    kind = "eager"

    def __init__(self, gm: fx.GraphModule):
        self.gm = gm
        self._fn = gm.forward

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        return self._fn(*ins)


class LoweredPiece:
    kind = "lowered"

    def __init__(self, executable: Any, record: graph_cache.Record, in_casts: list[int], out_casts: list[int],
                 out_meta: list[Any], stablehlo_chars: int, restride: frozenset[int] = frozenset()):
        self.executable = executable
        self.record = record
        self._constants: dict[torch.device, list[torch.Tensor]] = {}
        self._io: dict[torch.device, tuple] = {}  # (host view, adopt) functions per device, made once
        self._in_casts = in_casts
        self._out_casts = [(i, out_meta[i].dtype) for i in out_casts]
        self._mutated = record.mutated
        self._n_user = len(record.out_slots)
        # XLA returns dense row-major buffers. An output an eager piece reads is given its traced strides (a
        # transposed view, a channels-last result): eager ops such as view() may rely on them. Everything
        # else stays dense: lowered pieces are value-semantic, and a copy per call would cost more than it buys.
        self._restride = [(i, tuple(int(d) for d in m.shape), tuple(int(d) for d in m.stride()))
                          for i, m in enumerate(out_meta)
                          if i in restride and isinstance(m, torch.Tensor) and m.numel() > 1
                          and not m.is_contiguous() and torch._prims_common.is_non_overlapping_and_dense_or_false(m)]
        self._layout = (record.out_spec, record.out_slots)
        self.stablehlo_chars = stablehlo_chars

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        device = ins[0].device if ins else torch.device("neuron", torch.neuron.current_device())
        originals = ins
        if self._in_casts:
            ins = list(ins)
            for i in self._in_casts:
                ins[i] = ins[i].to(fx_passes.emulated(ins[i].dtype))
        consts = self._constants.get(device)
        if consts is None:
            consts = self._constants[device] = [c.to(device) for c in self.record.constants]
        if device.type != "cpu":
            dev.drain(device)
        io = self._io.get(device)
        if io is None:
            io = self._io[device] = (dev.host_views(device), dev.adopter(device))
        view, adopt = io
        hosts = [view(t) for t in ins]
        hosts += [view(c) for c in consts]
        hosts = [h if h.is_contiguous() else h.contiguous() for h in hosts]
        outs = self.executable.run(hosts)
        n = len(outs) - len(self._mutated)
        for idx, out in zip(self._mutated, outs[n:]):
            view(originals[idx]).copy_(out)
        results = [adopt(o) for o in outs[:n]]
        spec, slots = self._layout
        flat = [results[s] if isinstance(s, int) else s[1] for s in slots]
        out = list(pytree.tree_unflatten(flat, spec))
        for i, dtype in self._out_casts:
            out[i] = out[i].to(dtype)
        for i, shape, stride in self._restride:
            t = torch.empty_strided(shape, stride, dtype=out[i].dtype, device=out[i].device)
            out[i] = t.copy_(out[i])
        return tuple(out)


def _example(v: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A CPU stand-in for a piece input: sizes, strides and dtype of the traced value, no data."""
    # int(): graphs AOTAutograd compiles later (the backward) carry sizes as SymInts with fixed values
    return torch.empty_strided(tuple(int(s) for s in v.shape), tuple(int(s) for s in v.stride()),
                               dtype=dtype or v.dtype, device="cpu")


def lower_piece(sub: fx.GraphModule, compile_target: str, dump: Callable[[str, str | bytes], None],
                restride: frozenset[int] = frozenset()) -> Any:
    """Lower one piece: graph cache (FX key) → else trace + torch-mlir; then the executable cache."""
    from ..compiler import driver

    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    out_node = next(n for n in reversed(sub.graph.nodes) if n.op == "output")
    out_meta = [n.meta.get("val") for n in out_node.args[0]]
    emulate = _env.get(_env.FP64).strip().lower() != "native"
    in_casts, out_casts = fx_passes.emulate_fp64(sub) if emulate else ([], [])
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

        tg = trace(sub, tuple(examples))
        record = graph_cache.Record(tg.stablehlo, tg.mutated_inputs, tg.out_layout.spec, tg.out_layout.slots,
                                    tg.constants)
        graph_cache.store(k, record)
    dump("module.stablehlo.mlir", record.stablehlo)
    if compile_target == "sim" and _env.get(_env.SIM_EXECUTOR).strip().lower() == "inductor":
        from .inductor_executor import InductorPiece

        return InductorPiece(sub, examples, in_casts, [(i, out_meta[i].dtype) for i in out_casts],
                             len(record.stablehlo))
    exe = driver.compile(record.stablehlo, target=compile_target, kind="graph")
    debug.dump_executable(dump, exe)
    return LoweredPiece(exe, record, in_casts, out_casts, out_meta, len(record.stablehlo), restride)

