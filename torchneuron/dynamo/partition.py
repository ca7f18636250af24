"""Split a static-shape AOT graph into pieces that are either lowered (one StableHLO program each) or run
eagerly on the device, op by op.

Which nodes run eagerly: ops the coverage table says have no lowering (``missing``), random ops (they draw
from the neuron generator, as in eager mode), and ops a lowering attempt named as failing (``forced``).
Factory nodes without tensor inputs (``empty`` feeding a random op) go with their users.

Scheduling is as-soon-as-possible over alternating groups E0, L0, E1, L1, ... (eager group *i* runs before
lowered group *i*). An eager node lands in the first eager group after everything it reads; a lowered node in
the first lowered group after everything it reads. A random draw whose inputs are shapes only therefore runs
in E0, ahead of the compiled program, and reaches it as an input: dropout does not split a graph. The number
of lowered pieces is the minimum the data dependencies allow for this classification.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
import torch.fx as fx

from ..custom_ops import registry as nki_ops
from ..lowering import coverage
from ..programs import fallbacks

LOWERED, EAGER = "lowered", "eager"


@dataclass
class PieceSpec:
    kind: str                                   # LOWERED | EAGER
    nodes: list[fx.Node]
    inputs: list[fx.Node] = field(default_factory=list)   # values read from outside the piece, in order
    outputs: list[fx.Node] = field(default_factory=list)  # values used after the piece


@dataclass
class EagerReason:
    op: str
    why: str
    random: bool
    where: str
    collective: bool = False
    host_check: bool = False

    @property
    def expected(self) -> bool:
        """Eager by design (random draws, collectives through the process group, error checks of a program's
        results), not for want of a lowering."""
        return self.random or self.collective or self.host_check


# Collectives (functional collectives in Dynamo graphs) run through the process group: on the simulator as
# eager pieces; on a Trn host they would be Neuron collectives inside the compiled graph.
_COLLECTIVE_NAMESPACES = ("_c10d_functional", "c10d", "c10d_functional")


def is_host_check(node: fx.Node) -> bool:
    """``torch.linalg``'s error check (``_linalg_check_errors`` on a factorisation's ``info``, kept in order by
    ``with_effects``): no device raises an error from inside a program, so the program returns ``info`` and
    the host checks it after the program has run, as a runtime on a Trn host would."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return is_host_check(node.args[0])
    return (node.target is torch.ops.higher_order.with_effects and len(node.args) > 1
            and node.args[1] is torch.ops.aten._linalg_check_errors.default)


def op_name(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return t.name()
    return getattr(t, "__name__", str(t))


def source_line(node: fx.Node) -> str:
    """The user's source line that produced the node ("file:line in fn"), or ''."""
    trace = node.meta.get("stack_trace") or ""
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith("File ")]
    return lines[-1].removeprefix("File ") if lines else ""


def _draws_random_numbers(node: fx.Node, status: str) -> bool:
    """ATen tags every op that may draw random numbers (the coverage table lists only the overloads it ran);
    attention ops are tagged for their dropout, and draw nothing at ``dropout_p=0``."""
    if not (torch.Tag.nondeterministic_seeded in node.target.tags or status == coverage.RANDOM):
        return False
    for i, arg in enumerate(node.target._schema.arguments):
        if arg.name == "dropout_p":
            value = node.kwargs.get("dropout_p", node.args[i] if i < len(node.args) else arg.default_value)
            return value != 0
    return True


def classify(gm: fx.GraphModule, forced: dict[str, str]) -> tuple[dict[fx.Node, str], dict[fx.Node, EagerReason]]:
    kinds: dict[fx.Node, str] = {}
    reasons: dict[fx.Node, EagerReason] = {}
    factories: list[fx.Node] = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            continue  # follows its source (below)
        if nki_ops.op_of(node.target, node.args) is not None:
            kinds[node] = EAGER  # an NKI kernel: on the sim it runs on the NKI simulator between compiled pieces
            continue
        name = op_name(node)
        if is_host_check(node):
            kinds[node] = EAGER
            reasons[node] = EagerReason("aten::_linalg_check_errors", "error check on the host after the program",
                                        False, source_line(node), host_check=True)
            continue
        if not isinstance(node.target, torch._ops.OpOverload):
            kinds[node] = EAGER
            reasons[node] = EagerReason(name, "not an ATen op", False, source_line(node))
            continue
        if node.target.namespace in _COLLECTIVE_NAMESPACES:
            kinds[node] = EAGER
            reasons[node] = EagerReason(name, "collective: runs through the process group", False, source_line(node),
                                        collective=True)
            continue
        status = coverage.status(name)
        random = _draws_random_numbers(node, status)
        if name in forced:
            kinds[node] = EAGER
            reasons[node] = EagerReason(name, forced[name], False, source_line(node))
        elif random:
            kinds[node] = EAGER
            reasons[node] = EagerReason(name, "random op: drawn from the neuron generator", True, source_line(node))
        elif status == coverage.MISSING:
            kinds[node] = EAGER
            reasons[node] = EagerReason(name, fallbacks.reason(name), False, source_line(node))
        elif not node.all_input_nodes:
            factories.append(node)
        else:
            kinds[node] = LOWERED
    for node in reversed(factories):  # a shape-only allocation goes where its users are
        users = [kinds.get(u) for u in node.users]
        kinds[node] = EAGER if users and all(k == EAGER for k in users) else LOWERED
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem:
            kinds[node] = kinds[node.args[0]]
    return kinds, reasons


def schedule(gm: fx.GraphModule, kinds: dict[fx.Node, str]) -> list[PieceSpec]:
    pos: dict[fx.Node, int] = {}
    groups: dict[int, list[fx.Node]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            p = pos[node.args[0]]
        else:
            earliest = max((pos[n] for n in node.all_input_nodes if n in pos), default=0)
            want_odd = kinds[node] == LOWERED
            p = earliest if (earliest % 2 == 1) == want_odd else earliest + 1
        pos[node] = p
        groups.setdefault(p, []).append(node)
    pieces = [PieceSpec(LOWERED if p % 2 else EAGER, groups[p]) for p in sorted(groups)]
    member = {n: i for i, piece in enumerate(pieces) for n in piece.nodes}
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    for i, piece in enumerate(pieces):
        seen_in: dict[fx.Node, None] = {}
        seen_out: dict[fx.Node, None] = {}
        for n in piece.nodes:
            for src in n.all_input_nodes:
                if member.get(src) != i:
                    seen_in[src] = None
            for user in n.users:
                if user is out_node or member.get(user) != i:
                    seen_out[n] = None
        piece.inputs, piece.outputs = list(seen_in), list(seen_out)
    return pieces


def subgraph(gm: fx.GraphModule, piece: PieceSpec) -> fx.GraphModule:
    """The piece as a GraphModule: one placeholder per input, a tuple of its outputs."""
    g = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for i, src in enumerate(piece.inputs):
        ph = g.placeholder(f"in_{i}")
        ph.meta.update({k: v for k, v in src.meta.items() if k in ("val", "tensor_meta")})
        env[src] = ph
    for n in piece.nodes:
        env[n] = g.node_copy(n, lambda a: env[a])
    g.output(tuple(env[n] for n in piece.outputs))
    return fx.GraphModule(gm, g, class_name="NeuronPiece")
