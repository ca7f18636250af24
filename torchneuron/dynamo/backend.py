"""``torch.compile(model, backend="neuron")``: Dynamo's FX graph → AOTAutograd (forward and backward,
functionalised) → per graph: partition → StableHLO → compiled executable (XLA:CPU on the sim).

Registered under the ``torch_dynamo_backends`` entry point, so ``backend="neuron"`` works right after install.
"""

from __future__ import annotations

from typing import Any

import torch.fx as fx

from . import aot_decompositions
from .compiled_graph import CompiledGraph


def _compiler(kind: str):
    def compile_graph(gm: fx.GraphModule, example_inputs: list) -> CompiledGraph:
        return CompiledGraph(gm, list(example_inputs), kind)

    return compile_graph


def neuron_backend(gm: fx.GraphModule, example_inputs: list, **kwargs: Any):
    """The Dynamo backend. ``mode=`` and ``options=`` of torch.compile are not used (a warning says so once;
    see ``torchneuron.compile_options``); a graph on CPU tensors returns neuron tensors (``call_contract``)."""
    from torch._dynamo.backends.common import aot_autograd
    from . import call_contract, debug, device_interface, metrics, notice, partition_cache

    call_contract.check_settings(kwargs)
    notice.compiling(gm)  # before AOTAutograd's trace: the line comes as early as the graph is known
    device_interface.register()
    if metrics.graph_seen(gm.code):
        metrics.add("recompiles")
    backend = aot_autograd(
        fw_compiler=_compiler("forward"), bw_compiler=_compiler("backward"),
        inference_compiler=_compiler("inference"), decompositions=aot_decompositions.table(),
        # recompute cheap views and pointwise ops in the backward instead of saving them: a saved t(weight)
        # would be materialised as a transposed copy by the forward program on every step; a warm process
        # loads the split from the cache
        partition_fn=partition_cache.partition,
        keep_inference_input_mutations=True)
    with metrics.backend_call():
        compiled = backend(gm, example_inputs)
    debug.dump_phases()
    if call_contract.on_cpu_only(example_inputs):
        return call_contract.results_on_neuron(compiled)
    return compiled


neuron_backend.__name__ = "neuron"
