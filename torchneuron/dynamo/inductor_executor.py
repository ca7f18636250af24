"""``TORCHNEURON_SIM_EXECUTOR=inductor``: run lowered pieces through inductor's CPU code on host views.

The simulator's default executor runs each piece's StableHLO on XLA:CPU, the program a Trn host would compile.
XLA:CPU's kernels are slower than PyTorch's own CPU kernels (measured: ~2x on matmul-heavy graphs, see
docs/compile.md), so a user who wants speed on the simulator can opt into this executor instead. The piece
is still lowered to StableHLO and kept (cached, dumped, a lowering failure still partitions the graph), so
what would run on a Trn host is unchanged; only the simulator's execution differs.

Inputs are host views of the device buffers (zero-copy); inductor writes in-place updates straight into
them; its buffers are allocated from the device's caching allocator (as host kernels' are), so fresh outputs
become neuron tensors without copies and count in the memory statistics; an output that is a view of an
input becomes a view of that neuron tensor.
"""

from __future__ import annotations

import torch
import torch.fx as fx

from ..programs import host_bridge as dev
from . import fx_passes
from .aten_executor import reshape_views


class InductorPiece:
    kind = "lowered"

    def __init__(self, sub: fx.GraphModule, examples: list[torch.Tensor], in_casts: list[int],
                 out_casts: list[tuple[int, torch.dtype]]):
        from torch._inductor.compile_fx import compile_fx_inner
        from torch._inductor.decomposition import select_decomp_table
        from torch.fx.experimental.proxy_tensor import make_fx

        # traced again on the CPU stand-ins, with inductor's decompositions (what compile_fx would apply): the
        # piece's metadata still describes neuron tensors, and inductor generates code for the device it reads
        # (views as reshapes: a decomposition may lay a value out otherwise than the device's kernel did)
        cpu_graph = make_fx(reshape_views(sub), decomposition_table=select_decomp_table(),
                            tracing_mode="fake")(*examples)
        self._fn = compile_fx_inner(cpu_graph, examples)
        self._strides = [tuple(e.stride()) for e in examples]
        self._in_casts = in_casts
        self._out_casts = out_casts

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        ins = fx_passes.cast_inputs(ins, self._in_casts)
        results = dev.call_on_host_views(self._fn, ins, dev.device_of_inputs(ins), self._strides)
        return tuple(fx_passes.cast_outputs(results, self._out_casts))
