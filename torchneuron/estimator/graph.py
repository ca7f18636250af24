"""ATen-level FX graphs for the estimator: traced from a function or module with fake tensors (no device
needed, nothing computed), or taken as they are (a compiled graph piece), and read op by op."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch.utils import _pytree as pytree

from ..lowering.auto_cast import NONE, AutoCast
from .cost import OpEstimate, op_cost
from .machine import Machine
from .op_work import TensorMeta, base_name, exact_flops, is_gather, is_tensor_op, is_view


STATE_INPUTS = "torchneuron_estimate_state_inputs"


def trace(fn: Any, args: tuple, kwargs: dict) -> fx.GraphModule:
    """``fn(*args, **kwargs)`` as an ATen graph. A module's parameters and buffers become graph inputs, so
    their bytes count as data the program reads."""
    from torch.fx.experimental.proxy_tensor import make_fx

    if isinstance(fn, torch.nn.Module):
        module = fn
        state = {**dict(module.named_parameters()), **dict(module.named_buffers())}

        def call(state, args, kwargs):
            return output_tensors(torch.func.functional_call(module, state, args, kwargs))

        gm = make_fx(call, tracing_mode="fake")(state, args, kwargs)
        gm.meta[STATE_INPUTS] = len(state)  # the first placeholders are the module's parameters and buffers
        return gm
    if not callable(fn):
        raise TypeError(f"torchneuron.estimate: expected a function or an nn.Module, got {type(fn).__name__}")

    def call_fn(args, kwargs):
        return output_tensors(fn(*args, **kwargs))

    return make_fx(call_fn, tracing_mode="fake")(args, kwargs)


def output_tensors(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors a call returns, wherever they sit: in pytrees, or in objects such as a KV cache
    (a graph can only return tensors)."""
    out: list[torch.Tensor] = []
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.Tensor):
            out.append(leaf)
        elif depth < 3 and hasattr(leaf, "__dict__") and not isinstance(leaf, type):
            out.extend(output_tensors(list(vars(leaf).values()), depth + 1))
    return out


@dataclass
class GraphCost:
    ops: list[OpEstimate]
    op_bytes: list[int]     # HBM bytes each op moves inside one compiled program
    extra_bytes: int        # program HBM traffic no op moves (an input returned as it is)
    compulsory_bytes: int   # graph inputs read, outputs written, inputs updated in place

    @property
    def fused_bytes(self) -> int:
        return sum(self.op_bytes) + self.extra_bytes


def _metas(value: Any) -> list[TensorMeta]:
    return [TensorMeta.of(v) for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _val(a: Any) -> Any:
    return a.meta.get("val") if isinstance(a, fx.Node) else a


def _root(node: fx.Node) -> fx.Node:
    """The value a chain of views starts from."""
    while node.op == "call_function" and is_view(str(node.target)) and node.args and isinstance(node.args[0], fx.Node):
        node = node.args[0]
    return node


def _readers(node: fx.Node) -> list[fx.Node]:
    """The ops that read ``node``'s value, through views of it."""
    out: list[fx.Node] = []
    for u in node.users:
        if u.op == "call_function" and is_view(str(u.target)):
            out.extend(_readers(u))
        else:
            out.append(u)
    return out


def _nbytes(node: fx.Node) -> int:
    return sum(t.nbytes for t in _metas(node.meta.get("val")))


def _input_widths(gm: fx.GraphModule, cast: AutoCast, weights: str) -> dict[fx.Node, float]:
    """Per graph input, the fraction of its bytes a program reads. With ``weights="constants"`` the module's
    parameters are compile-time constants (``torch_neuronx.trace``): an FP32 weight that only the auto-cast
    operations read is cast once when compiling, and read at the cast type's width."""
    widths: dict[fx.Node, float] = {}
    if weights != "constants" or not cast.enabled:
        return widths
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for ph in placeholders[:gm.meta.get(STATE_INPUTS, 0)]:
        val = ph.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dtype != torch.float32:
            continue
        readers = _readers(ph)
        if readers and all(r.op == "call_function" and cast.casts(val.dtype, is_tensor_op(str(r.target)))
                           for r in readers):
            widths[ph] = cast.dtype.itemsize / val.dtype.itemsize
    return widths


def graph_cost(gm: fx.GraphModule, m: Machine, cast: AutoCast = NONE, weights: str = "inputs") -> GraphCost:
    if weights not in ("inputs", "constants"):
        raise ValueError(f"torchneuron.estimate: weights must be 'inputs' or 'constants', got {weights!r}")
    ops: list[OpEstimate] = []
    op_bytes: list[int] = []
    op_index: dict[fx.Node, int] = {}
    read: set[fx.Node] = set()
    widths = _input_widths(gm, cast, weights)
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    returned = {_root(a) for a in pytree.tree_leaves(out_node.args[0]) if isinstance(a, fx.Node)}
    mutated: set[fx.Node] = set()
    extra = 0
    spilled = 0
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        args, kwargs = pytree.tree_map(_val, (node.args, node.kwargs))
        out = node.meta.get("val")
        ins, outs = _metas((args, kwargs)), _metas(out)
        name = str(node.target)
        est = op_cost(name, ins, outs, m, flops=exact_flops(node.target, args, kwargs, out), cast=cast)
        nbytes = 0
        arg_nodes = [a for a in pytree.tree_leaves((node.args, node.kwargs)) if isinstance(a, fx.Node)]
        for a in arg_nodes:  # program inputs: read from HBM where first used
            root = _root(a)
            if root.op != "placeholder" or root in read or est.bound == "-":
                continue
            if is_gather(name) and _nbytes(root) > sum(t.nbytes for t in outs):
                nbytes += sum(t.nbytes for t in outs)  # a table: only the rows gathered
                continue
            read.add(root)
            nbytes += int(_nbytes(root) * widths.get(root, 1.0))
        if base_name(name).endswith("_") and node.args:  # inputs updated in place (a list: _foreach_*_)
            first = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
            for target in {_root(a) for a in first if isinstance(a, fx.Node)}:
                if target.op == "placeholder" and target not in mutated:
                    mutated.add(target)
                    nbytes += _nbytes(target)  # written back
        if node in returned and est.bound != "-":
            nbytes += sum(t.nbytes for t in outs)
        op_index[node] = len(ops)
        ops.append(est)
        op_bytes.append(nbytes)
    compulsory = sum(op_bytes)
    # Ops work tile by tile, so intermediates stay in SBUF: elementwise work and copies stream, and a matmul
    # walks its left operand in row blocks. Its right operand, though, is reused by every row block: one too
    # big for SBUF (per batch element) is written to HBM and streamed back.
    for node, i in op_index.items():
        size = sum(t.nbytes for t in ops[i].outputs)
        if ops[i].bound != "-" and size > m.sbuf_bytes // 4 and \
                any(_whole_operand_bytes(r, node) > m.sbuf_bytes // 4 for r in _readers(node)):
            op_bytes[i] += 2 * size
            spilled += 2 * size
    for root in returned:  # an input (or a view of one) returned as it is: no op wrote it
        if root.op == "placeholder" and root not in mutated:
            extra += _nbytes(root)
    return GraphCost(ops, op_bytes, extra, compulsory + extra)


# The operand positions a Tensor-engine op reuses whole (its "right" operand; attention's keys and values).
_WHOLE_OPERANDS = {"mm": (1,), "matmul": (1,), "linear": (1,), "bmm": (1,), "addmm": (2,), "baddbmm": (2,),
                   "addbmm": (2,), "convolution": (1,), "_convolution": (1,)}


def _whole_operand_bytes(reader: fx.Node, value: fx.Node) -> int:
    """Bytes of ``value`` that ``reader`` needs at once per batch element (0: it streams ``value``)."""
    if reader.op != "call_function" or not is_tensor_op(str(reader.target)):
        return 0
    plain = base_name(str(reader.target))
    positions = _WHOLE_OPERANDS.get(plain, (1, 2))  # attention: keys and values
    for pos in positions:
        if pos < len(reader.args) and isinstance(reader.args[pos], fx.Node) and _root(reader.args[pos]) is value:
            val = reader.args[pos].meta.get("val")
            if isinstance(val, torch.Tensor):
                per = math.prod(val.shape[:-2]) if val.dim() > 2 else 1
                return val.numel() * val.dtype.itemsize // max(per, 1)
    return 0
