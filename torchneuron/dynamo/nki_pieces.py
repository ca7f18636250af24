"""NKI op nodes (``torchneuron.nki_op``) in a compiled graph on a Trn host.

On the sim an NKI op node is a partition boundary: its piece runs eagerly, so the op's kernels run on the NKI
simulator on the device buffers between compiled pieces (``partition.classify``). On a Trn host each NKI op
node becomes a StableHLO program of one ``custom_call @AwsNeuronCustomNativeKernel`` carrying the op's kernel
launches (``nki.neuron_sdk``), compiled by neuronx-cc like the graph's other pieces; the surrounding ops of the
piece run as eager device ops. The launches are recorded by running the op's function shape-only on the
node's traced shapes, so the config names each kernel argument by where it comes from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from ..custom_ops import registry

# torchneuron.nki (the simulator) loads only for graphs that have NKI ops


class NkiOnTrnError(RuntimeError):
    """An NKI op in a compiled graph that a Trn host's custom call cannot express."""


def has_nki(gm: fx.GraphModule) -> bool:
    return any(n.op == "call_function" and registry.op_of(n.target, n.args) for n in gm.graph.nodes)


def _meta(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return torch.empty_strided(tuple(int(s) for s in v.shape), tuple(int(s) for s in v.stride()),
                                   dtype=v.dtype, device="meta")
    if isinstance(v, (list, tuple)):
        return type(v)(_meta(x) for x in v)
    return v


def _spec(t: torch.Tensor) -> Any:
    from ..nki import neuron_sdk

    return neuron_sdk.Spec(tuple(int(s) for s in t.shape), str(t.dtype).removeprefix("torch."))


def _flat_tensors(v: Any) -> list[Any]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _flat_tensors(x)]
    return []


def custom_call_for(node: fx.Node) -> tuple[str, list[fx.Node]]:
    """The custom-call module of one NKI op node and the graph values its operands are, in order."""
    from ..nki import neuron_sdk, torch_io

    name = registry.op_of(node.target, node.args)
    if isinstance(node.target, torch._ops.HigherOrderOperator):
        raise NkiOnTrnError(f"{name} mutates its inputs; on a Trn host a compiled graph carries functional NKI ops "
                            "only so far. Call it outside torch.compile (torch.compiler.disable), or return new "
                            "tensors instead of writing the inputs.")
    fn = registry.function(name)
    operands = list(node.all_input_nodes)
    inputs = [_meta(n.meta["val"]) for n in operands]
    by_node = dict(zip(operands, inputs))  # the same meta tensor objects, so launches name their inputs
    args = fx.node.map_arg(node.args, lambda n: by_node[n])
    kwargs = fx.node.map_arg(node.kwargs, lambda n: by_node[n])
    with torch_io.recording(inputs) as rec:
        fn(*args, **kwargs)
    outputs = _flat_tensors(node.meta["val"])
    config = neuron_sdk.backend_config(name, rec.launches)
    text = neuron_sdk.custom_call_module(name, [_spec(t) for t in inputs], [_spec(t) for t in outputs], config)
    return text, operands


class TrnNkiPiece:
    """An eager piece with NKI op nodes, for a Trn host: each NKI node runs its compiled custom call."""

    kind = "eager"

    def __init__(self, gm: fx.GraphModule, target: str, dump: Callable[[str, str | bytes], None]):
        from ..compiler import driver

        self.gm = gm
        self._calls: dict[fx.Node, Any] = {}
        for i, node in enumerate(n for n in gm.graph.nodes if n.op == "call_function"
                                 and registry.op_of(n.target, n.args)):
            text, _ = custom_call_for(node)
            dump(f"nki{i}.stablehlo.mlir", text)
            self._calls[node] = driver.compile(text, target=target, kind="graph")
        self._interp = _CustomCallInterpreter(gm, self._calls)

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        return self._interp.run(*ins)


class _CustomCallInterpreter(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule, calls: dict[fx.Node, Any]):
        super().__init__(gm)
        self._calls = calls

    def run_node(self, n: fx.Node) -> Any:
        exe = self._calls.get(n)
        if exe is None:
            return super().run_node(n)
        operands = [self.env[a] for a in n.all_input_nodes]
        outs = exe.run(operands)
        return outs[0] if isinstance(n.meta["val"], torch.Tensor) else tuple(outs)
