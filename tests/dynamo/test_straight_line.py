"""A piece's graph as straight-line code over the ATen handles computes what FX's own forward computes, and
drops every value after its last use."""

from __future__ import annotations

import gc
import weakref

import torch
import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

from torchneuron.dynamo import straight_line


def _traced(fn, *args) -> fx.GraphModule:
    return make_fx(fn)(*args)


def test_matches_fx_forward_with_views_multi_output_ops_lists_and_kwargs() -> None:
    def fn(x, w):
        var, mean = torch.var_mean(x, dim=1, keepdim=True)       # a two-output op: getitem nodes
        y = (x - mean) * torch.rsqrt(var + 1e-5)
        y = y.view(4, 2, 8).transpose(1, 2).reshape(4, 16)       # views, a shape list
        z = torch.nn.functional.linear(y, w).clamp(min=-1.0)     # kwargs
        return z.sum(dim=[0, 1]), torch.cat([z, y[:, :3]], dim=1)

    x, w = torch.randn(4, 16), torch.randn(3, 16)
    gm = _traced(fn, x, w)
    got = straight_line.compile_graph(gm)([x, w])
    want = gm(x, w)
    assert isinstance(got, type(want)) and len(got) == len(want)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=0, atol=0)


def test_constants_of_the_graph_module_are_read() -> None:
    class WithBuffer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.tensor([2.0, 3.0]))

        def forward(self, x):
            return x * self.scale

    gm = fx.symbolic_trace(WithBuffer())
    # symbolic_trace keeps FX-level calls; make them ATen calls on the get_attr constant
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is not getattr:
            n.target = torch.ops.aten.mul.Tensor
    gm.recompile()
    x = torch.ones(2)
    torch.testing.assert_close(straight_line.compile_graph(gm)([x]), torch.tensor([2.0, 3.0]))


def test_an_intermediate_is_released_after_its_last_reader() -> None:
    seen: list[weakref.ref] = []

    def remember(t: torch.Tensor) -> torch.Tensor:
        seen.append(weakref.ref(t))
        return t

    def probe(t: torch.Tensor) -> torch.Tensor:
        gc.collect()
        alive.append(seen[0]() is not None)
        return t

    alive: list[bool] = []
    g = fx.Graph()
    x = g.placeholder("x")
    big = g.call_function(torch.ops.aten.mul.Tensor, (x, 2.0))
    kept = g.call_function(remember, (big,))
    small = g.call_function(torch.ops.aten.sum.default, (kept,))
    g.output(g.call_function(probe, (small,)))
    fn = straight_line.compile_graph(fx.GraphModule(torch.nn.Module(), g))
    out = fn([torch.ones(1000)])
    assert out.item() == 2000.0
    assert alive == [False]  # the 1000-element product was gone before the graph ended


def test_a_failing_op_shows_its_graph_line_in_the_traceback() -> None:
    gm = _traced(lambda a, b: a @ b, torch.ones(2, 3), torch.ones(3, 2))
    fn = straight_line.compile_graph(gm)
    try:
        fn([torch.ones(2, 3), torch.ones(4, 2)])
    except RuntimeError as e:
        import traceback

        text = "".join(traceback.format_exception(e))
        assert "aten.mm.default" in text
    else:
        raise AssertionError("a shape mismatch must raise")
