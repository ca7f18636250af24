"""The simulator's default executor: a lowered piece runs as its ATen graph on PyTorch's CPU kernels.

On the simulator a neuron tensor's memory is host RAM and an eager neuron op is a CPU kernel over host views
of it. A compiled piece can therefore run the very same kernels over the whole graph in one Python call: the
per-op dispatch of eager mode is gone and the arithmetic is eager's, so compiled is never slower than eager
(XLA:CPU's own kernels are up to 5x slower than PyTorch's on convolutions). What a Trn host would run is the
piece's StableHLO: it is still lowered, cached, dumped, and executed on XLA:CPU to check this executor's
results (``cross_check.py``).

Graph values keep eager's strides, except where a kernel on the CPU returns a layout the device's fake
kernels did not predict: the piece's ``view`` calls run as ``reshape`` (a view where the strides allow, a copy
where they do not), as a value-semantic piece may.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.fx as fx

from ..programs import host_bridge as dev
from . import fx_passes, straight_line

aten = torch.ops.aten


def reshape_views(gm: fx.GraphModule) -> fx.GraphModule:
    """A copy of ``gm`` whose ``view`` calls are ``reshape``: AOTAutograd emits ``view`` where the traced
    strides allowed one; a CPU kernel (or a decomposition inductor applies) may produce a layout that does not."""
    gm = copy.deepcopy(gm)
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (aten.view.default, aten._unsafe_view.default):
            node.target = aten.reshape.default
            changed = True
    if changed:
        gm.recompile()
    return gm


class AtenPiece:
    kind = "lowered"

    def __init__(self, sub: fx.GraphModule, in_casts: list[int], out_casts: list[tuple[int, torch.dtype]],
                 mutated: list[int], out_meta: list[Any], restride: frozenset[int], event: dev.ProgramEvent):
        self._fn = straight_line.compile_graph(reshape_views(sub))
        self._in_casts = in_casts
        self._out_casts = out_casts
        # a float64 input computed in float32 and updated in place: its float32 copy is written back
        self._written_casts = [i for i in in_casts if i in set(mutated)]
        self._restride = [(i, tuple(int(s) for s in m.stride())) for i, m in enumerate(out_meta)
                          if i in restride and isinstance(m, torch.Tensor) and m.numel() > 1]
        self.event = event

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        cast = fx_passes.cast_inputs(ins, self._in_casts)
        out = dev.call_on_host_views(self._fn, cast, dev.device_of_inputs(ins), event=self.event)
        for i in self._written_casts:
            ins[i].copy_(cast[i])
        out = fx_passes.cast_outputs(out, self._out_casts)
        # an eager piece reads this output: give it the strides the graph was traced with (view() relies on them)
        for i, stride in self._restride:
            t = out[i]
            if t.stride() != stride:
                out[i] = torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device).copy_(t)
        return tuple(out)
