"""The lowering pass pipeline: small named FX passes that turn a traced core-ATen graph into one torch-mlir
imports (static shapes, no in-place updates of inputs, constants as arguments, flat tensor outputs).

``PIPELINE`` is the one list, in order; ``run_pipeline`` runs it (``trace.trace`` calls it between tracing
and ``fx_to_stablehlo.to_stablehlo``). Each pass changes the graph in place and records what the caller must
know in a ``Prepared``. Set the logger ``torchneuron.lowering`` to DEBUG to print the graph after every pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from .errors import DynamicShapeError, LoweringError

log = logging.getLogger("torchneuron.lowering")


@dataclass
class OutputLayout:
    """How to rebuild the user's output structure from the flat list of tensors the module returns."""

    spec: pytree.TreeSpec
    slots: list[Any]  # per flat leaf: int (index into module results) or ("const", value)
    mutation_slots: list[Any] = field(default_factory=list)  # the same for the trailing mutation outputs

    def rebuild(self, results: list) -> Any:
        leaves = [results[s] if isinstance(s, int) else s[1] for s in self.slots]
        return pytree.tree_unflatten(leaves, self.spec)


@dataclass
class Prepared:
    """What the passes found out about the graph."""

    mutated_inputs: list[int] = field(default_factory=list)  # input each trailing mutation output writes back to
    constants: list[torch.Tensor] = field(default_factory=list)  # lifted tensor constants (trailing inputs)
    layout: OutputLayout | None = None  # rebuilds the user's outputs from the non-mutation results


Pass = Callable[[fx.GraphModule, Prepared], None]


def _is_symbolic(v: Any) -> bool:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(v, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in v.shape)
    return False


def check_static_shapes(gm: fx.GraphModule, prepared: Prepared) -> None:
    """Refuse graphs with symbolic sizes: Neuron compiles one static-shape program per input shape."""
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        leaves = pytree.tree_leaves(val) if val is not None else []
        if any(_is_symbolic(v) for v in leaves):
            where = f"{node.op} {node.target}" if node.op != "placeholder" else f"input {node.name}"
            raise DynamicShapeError(
                f"cannot lower a graph with dynamic shapes ({where} has symbolic size {val}). StableHLO for "
                "Neuron is static-shape: trace with concrete example inputs (torch.compile(..., dynamic=False)), "
                "and lower once per input shape (pad or bucket variable dimensions).")


def convert_input_mutations(gm: fx.GraphModule, prepared: Prepared) -> None:
    """Functionalization ends the graph with ``aten.copy_(placeholder, new_value)`` for each mutated input.
    Replace each by an extra output (after the user's), recording the placeholder indices in the order of
    those outputs (``prepared.mutated_inputs``)."""
    placeholders = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    mutated: list[int] = []
    extra: list[fx.Node] = []
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten.copy_.default and node.args[0] in placeholders:
            mutated.append(placeholders[node.args[0]])
            src = node.args[1]
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            extra.append(src)
    out_node.args = ((out_node.args[0], tuple(extra)),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    for node in gm.graph.nodes:  # anything still mutating would crash the importer: refuse it here
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and schema is not None and any(
                a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            raise LoweringError(f"the traced graph still mutates a tensor in place ({node.target}) after "
                                "functionalization; this in-place pattern has no StableHLO form")
    prepared.mutated_inputs = mutated


def rewrite_as_strided(gm: fx.GraphModule, prepared: Prepared) -> None:
    """torch-mlir's own rewrite of ``as_strided`` into gathers with constant indices, run here (before
    ``lift_tensor_constants``) rather than inside the importer, so its index tensors become arguments too."""
    from torch_mlir.extras.fx_as_strided import rewrite_as_strided as rewrite

    if rewrite(gm.graph):
        gm.recompile()


def lift_tensor_constants(gm: fx.GraphModule, prepared: Prepared) -> None:
    """Turn every multi-element tensor constant (``get_attr``) into a trailing graph input.

    Weights and captured tensors then travel as arguments (never baked into the IR as ``dense_resource``
    blobs), so one compiled program serves any weight values and the IR text stays small. One-element
    constants stay inline: they become splat ``dense<...>`` attributes, which compilers fold.
    """
    lifted: list[torch.Tensor] = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        value = gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor) or value.numel() <= 1:
            continue
        if anchor is None:
            ctx = gm.graph.inserting_before(next(iter(gm.graph.nodes)))
        else:
            ctx = gm.graph.inserting_after(anchor)
        with ctx:
            ph = gm.graph.placeholder(f"const_{len(lifted)}")
        from torch._subclasses.fake_tensor import FakeTensor

        if isinstance(node.meta.get("val"), FakeTensor):
            ph.meta["val"] = node.meta["val"]
        else:  # a constant added after tracing (rewrite_as_strided): describe it for the importer
            from torch.fx.passes.shape_prop import _extract_tensor_metadata

            ph.meta["tensor_meta"] = _extract_tensor_metadata(value)
        node.replace_all_uses_with(ph)
        gm.graph.erase_node(node)
        anchor = ph
        lifted.append(value.detach())
    if lifted:
        gm.graph.lint()
        gm.recompile()
    prepared.constants = lifted


def flatten_outputs(gm: fx.GraphModule, prepared: Prepared) -> None:
    """Make the graph return a flat tuple of tensors: ``(user outputs..., mutation outputs...)``; None, Python
    numbers and other constants are kept out of the IR and put back by ``OutputLayout.rebuild``."""
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    leaves, spec = pytree.tree_flatten(out_node.args[0])
    slots: list[Any] = []
    kept: list[fx.Node] = []
    for leaf in leaves:
        if isinstance(leaf, fx.Node) and isinstance(leaf.meta.get("val"), torch.Tensor):
            slots.append(len(kept))
            kept.append(leaf)
        elif isinstance(leaf, fx.Node):
            val = leaf.meta.get("val")
            if _is_symbolic(val):
                raise DynamicShapeError(f"graph output {leaf.name} is a symbolic value {val}; "
                                        "Neuron graphs return tensors of static shape")
            slots.append(("const", val))
        else:
            slots.append(("const", leaf))
    out_node.args = (tuple(kept),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    # the output is (user_out, mutations): rebuild() serves the user part, the rest is written back
    user_spec, _ = spec.children()
    n_user = user_spec.num_leaves
    prepared.layout = OutputLayout(user_spec, slots[:n_user], slots[n_user:])


_UNSIGNED_TO_SIGNED = {getattr(torch, f"uint{w}"): getattr(torch, f"int{w}") for w in (16, 32, 64)
                       if hasattr(torch, f"uint{w}")}


def signed_results_for_unsigned(gm: fx.GraphModule, prepared: Prepared) -> None:
    """torch-mlir's FX importer has no uint16/32/64 types. A result that is a same-width signed integer cast
    to unsigned (``x.to(torch.uint64)``: the same bits) is returned as the signed integer instead, and the
    graph's output metadata says so; callers cast results whose dtype differs from PyTorch's (the strict
    path does), which restores the unsigned dtype with the same bits. Runs last: it reads the flat outputs."""
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    if out is None:
        return
    changed = False

    def replace(arg):
        nonlocal changed
        if not (isinstance(arg, fx.Node) and arg.op == "call_function"
                and arg.target in (torch.ops.aten._to_copy.default, torch.ops.prims.convert_element_type.default)):
            return arg
        want = getattr(arg.meta.get("val"), "dtype", None)
        src = arg.args[0] if arg.args else None
        have = getattr(src.meta.get("val"), "dtype", None) if isinstance(src, fx.Node) else None
        if want in _UNSIGNED_TO_SIGNED and have == _UNSIGNED_TO_SIGNED[want]:
            changed = True
            return src
        return arg

    out.args = fx.node.map_aggregate(out.args, replace)
    if changed:
        gm.graph.eliminate_dead_code()
        gm.recompile()


PIPELINE: tuple[Pass, ...] = (
    check_static_shapes,
    convert_input_mutations,
    rewrite_as_strided,
    lift_tensor_constants,
    flatten_outputs,
    signed_results_for_unsigned,
)


def run_pipeline(gm: fx.GraphModule, pipeline: tuple[Pass, ...] = PIPELINE) -> Prepared:
    """Run the passes in order on ``gm`` (in place)."""
    prepared = Prepared()
    for p in pipeline:
        p(gm, prepared)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("after %s:\n%s", p.__name__, gm.graph)
    return prepared
