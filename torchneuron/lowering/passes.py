"""Small named FX passes run on a core-ATen graph before it is imported into MLIR.

Each pass takes a GraphModule, changes it in place and returns what the caller needs to know. Set the
logger ``torchneuron.lowering`` to DEBUG to print the graph after every pass.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from .errors import DynamicShapeError

log = logging.getLogger("torchneuron.lowering")


def _dump(name: str, gm: fx.GraphModule) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("after %s:\n%s", name, gm.graph)


def _is_symbolic(v: Any) -> bool:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(v, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in v.shape)
    return False


def check_static_shapes(gm: fx.GraphModule) -> None:
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
    _dump("check_static_shapes", gm)


def rewrite_as_strided(gm: fx.GraphModule) -> None:
    """torch-mlir's own rewrite of ``as_strided`` into gathers with constant indices, run here (before
    ``lift_tensor_constants``) rather than inside the importer, so its index tensors become arguments too."""
    from torch_mlir.extras.fx_as_strided import rewrite_as_strided as rewrite

    if rewrite(gm.graph):
        gm.recompile()
    _dump("rewrite_as_strided", gm)


def lift_tensor_constants(gm: fx.GraphModule) -> list[torch.Tensor]:
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
    _dump("lift_tensor_constants", gm)
    return lifted


@dataclass
class OutputLayout:
    """How to rebuild the user's output structure from the flat list of tensors the module returns."""

    spec: pytree.TreeSpec
    slots: list[Any]  # per flat leaf: int (index into module results) or ("const", value)

    def rebuild(self, results: list) -> Any:
        leaves = [results[s] if isinstance(s, int) else s[1] for s in self.slots]
        return pytree.tree_unflatten(leaves, self.spec)


def flatten_outputs(gm: fx.GraphModule) -> OutputLayout:
    """Make the graph return a flat tuple of tensors; None, Python numbers and other constants are kept
    out of the IR and put back by ``OutputLayout.rebuild``."""
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
    _dump("flatten_outputs", gm)
    return OutputLayout(spec, slots)
