"""Functional collectives inside torch.compile(backend="neuron") graphs: the collective is a partition
boundary on the simulator (an eager piece between compiled pieces); results match eager."""

from __future__ import annotations

import warnings

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc
from _report import run_job

NEURON = torch.device("neuron")


def step(x, w):
    h = torch.relu(x @ w)
    h = fc.all_reduce(h, "sum", dist.group.WORLD)  # a tensor-parallel style reduction mid-graph
    g = fc.all_gather_tensor(h * 2, 0, dist.group.WORLD)
    return torch.tanh(g).sum(dim=0) + 1


def compiled_matches_eager():
    torch.manual_seed(dist.get_rank())
    x = torch.randn(4, 8, device=NEURON)
    w = torch.randn(8, 8, device=NEURON)
    expected = step(x, w)
    fn = torch.compile(step, backend="neuron", fullgraph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(x, w)
        again = fn(x + 1, w)
    fallbacks = [str(c.message) for c in caught if type(c.message).__name__ == "CompileFallbackWarning"]
    assert not fallbacks, fallbacks  # a collective is an expected partition boundary, not a missing lowering
    torch.testing.assert_close(out.cpu(), expected.cpu(), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(again.cpu(), step(x + 1, w).cpu(), atol=1e-5, rtol=1e-4)
    m = torch.neuron.get_dynamo_metrics()
    # one graph, split at the collectives: they run eagerly (through the process group) between lowered pieces
    assert m["graphs_compiled"] == 1 and m["partitions"] == 1, m
    assert m["lowered_pieces"] >= 2 and m["eager_pieces"] >= 1, m
    assert m["fallback_ops"] == {}, m
    return m


def compiled_backward():
    torch.manual_seed(0)
    w = torch.randn(8, 8, device=NEURON, requires_grad=True)
    x = torch.randn(4, 8, device=NEURON)

    def loss(x, w):
        return fc.all_reduce(x @ w, "sum", dist.group.WORLD).square().sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.compile(loss, backend="neuron")(x, w).backward()
    ref = w.detach().clone().requires_grad_()
    loss(x, ref).backward()
    torch.testing.assert_close(w.grad.cpu(), ref.grad.cpu(), atol=1e-5, rtol=1e-4)


def main() -> None:
    run_job("neuron", [("compiled functional collectives", compiled_matches_eager),
                       ("compiled backward through all_reduce", compiled_backward)])


if __name__ == "__main__":
    main()
