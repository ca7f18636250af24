"""`torchneuron.wrap_nki(kernel)`: a kernel as a callable on torch tensors, with a launch grid."""

from __future__ import annotations

import gc

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

import torchneuron
from tests.custom_ops import kernels
from tests.nki.nki_test_utils import neuron_randn
from torchneuron.nki import NkiError


def test_current_api_kernel_with_and_without_lnc_grid():
    k = torchneuron.wrap_nki(kernels.add_returning)
    a, b = neuron_randn(200, 8), neuron_randn(200, 8, seed=1)
    torch.testing.assert_close(k(a, b).cpu(), a.cpu() + b.cpu())
    torch.testing.assert_close(k[1](a, b).cpu(), a.cpu() + b.cpu())
    assert "add_returning" in repr(k)


def test_legacy_kernel_with_an_spmd_grid():
    k = torchneuron.wrap_nki(kernels.legacy_rows_plus_one)
    x = neuron_randn(512, 4)
    torch.testing.assert_close(k[4](x).cpu(), x.cpu() + 1)


def test_a_plain_function_is_taken_as_a_current_api_kernel():
    def plain(x, out):
        kernels.copy_into.func(x, out)

    x, out = neuron_randn(16, 16), torch.empty(16, 16, device="neuron")
    torchneuron.wrap_nki(plain)(x, out)
    torch.testing.assert_close(out.cpu(), x.cpu())


def test_cpu_tensors_are_refused():
    with pytest.raises(NkiError, match=r"called through torchneuron.wrap_nki.*argument a \(4, 4\) is a cpu tensor"):
        torchneuron.wrap_nki(kernels.add_returning)(torch.ones(4, 4), torch.ones(4, 4))


@pytest.fixture
def dynamo():
    import torch._dynamo

    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()
    yield torch._dynamo
    torch._dynamo.reset()


def _launch_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and "torchneuron.nki_launch" in str(n.target)]


K = torchneuron.wrap_nki(kernels.add_returning)


def f(a, b):
    return K(a.exp(), b) * 2


def test_inside_torch_compile_the_launch_is_one_node_of_the_graph(dynamo):
    a, b = neuron_randn(130, 8), neuron_randn(130, 8, seed=1)
    explained = dynamo.explain(f)(a, b)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    (node,) = _launch_nodes(explained.graphs[0])
    assert node.target is torch.ops.torchneuron.nki_launch.default
    dynamo.reset()
    got = torch.compile(f, backend="neuron")(a, b)
    torch.testing.assert_close(got.cpu(), f(a, b).cpu())
    torch.testing.assert_close(got.cpu(), (a.cpu().exp() + b.cpu()) * 2)
    m = torch.neuron.get_dynamo_metrics()  # the launch is an NKI op node: an eager piece between lowered ones
    assert m["graphs_compiled"] == 1 and m["eager_pieces"] == 1 and m["fallback_ops"] == {}


def test_fullgraph_with_the_grid_wrapped_inside_the_compiled_function(dynamo):
    def g(x, y):
        s = torchneuron.wrap_nki(kernels.add_returning)[1](x, y)
        same, plus = torchneuron.wrap_nki(kernels.copy_and_plus_one)(s)
        return torchneuron.wrap_nki(kernels.legacy_rows_plus_one)[2](torch.cat([plus - same, s])) * 3

    x, y = neuron_randn(128, 8), neuron_randn(128, 8, seed=1)
    got = torch.compile(g, backend="neuron", fullgraph=True)(x, y)
    torch.testing.assert_close(got.cpu(), g(x, y).cpu())
    torch.testing.assert_close(got.cpu(), torch.cat([torch.full((128, 8), 6.0), (x.cpu() + y.cpu() + 1) * 3]))


def test_new_shapes_recompile_without_breaking_the_graph(dynamo):
    compiled = torch.compile(f, backend="neuron")
    for rows in (130, 100, 70):  # the second shape recompiles with symbolic shapes: the launch stays planned
        a, b = neuron_randn(rows, 8), neuron_randn(rows, 8, seed=1)
        torch.testing.assert_close(compiled(a, b).cpu(), (a.cpu().exp() + b.cpu()) * 2)
    m = torch.neuron.get_dynamo_metrics()
    assert m["graphs_compiled"] == 3 and m["partitions"] == 3 and m["eager_pieces"] == 3


def test_constant_and_keyword_arguments(dynamo):
    from tests.custom_ops.test_launch_signatures import scaled

    def g(x):
        return torchneuron.wrap_nki(scaled)(x, 3.0) + torchneuron.wrap_nki(scaled)(x=x, factor=0.5)

    x = neuron_randn(64, 8)
    got = torch.compile(g, backend="neuron", fullgraph=True)(x)
    torch.testing.assert_close(got.cpu(), x.cpu() * 3.5)


def test_a_kernel_writing_an_output_argument_declares_only_that_argument_written(dynamo):
    def g(x):
        out = torch.empty_like(x)
        torchneuron.wrap_nki(kernels.copy_into)(x * 2, out)
        return out + 1

    x = neuron_randn(100, 16)
    explained = dynamo.explain(g)(x)
    assert explained.graph_break_count == 0
    (node,) = _launch_nodes(explained.graphs[0])
    assert node.target is torch.ops.torchneuron.nki_launch_.default
    _, read, written = node.args
    assert len(read) == 1 and len(written) == 1  # x * 2 is only read
    schema = torch.ops.torchneuron.nki_launch_.default._schema
    assert [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write] == ["written"]
    dynamo.reset()
    got = torch.compile(g, backend="neuron", fullgraph=True)(x)
    torch.testing.assert_close(got.cpu(), x.cpu() * 2 + 1)


def test_a_kernel_writing_a_graph_input_writes_it_as_in_eager(dynamo):
    def g(x):
        torchneuron.wrap_nki(kernels.increment_in_place)(x)
        return x * 2

    x = neuron_randn(32, 8)
    x_eager, x_compiled = x.clone(), x.clone()
    want = g(x_eager)
    got = torch.compile(g, backend="neuron", fullgraph=True)(x_compiled)
    torch.testing.assert_close(got.cpu(), want.cpu())
    torch.testing.assert_close(x_compiled.cpu(), x.cpu() + 1)
    torch.testing.assert_close(x_compiled.cpu(), x_eager.cpu())


def test_a_kernel_that_returns_and_writes_an_argument_is_refused_naming_both(dynamo):
    def g(x):
        return torchneuron.wrap_nki(kernels.increment_and_return_copy)(x) + 1

    with pytest.raises(Exception, match=r"kernel increment_and_return_copy returns outputs and also writes its "
                                        r"argument 'x'.*mutates_args=\('x',\)"):
        torch.compile(g, backend="neuron", fullgraph=True)(neuron_randn(8, 8))


def test_gradients_flow_as_in_eager_around_the_launch(dynamo):
    def g(a, b):
        return (K(a, b) * a).sum()  # the launch's output carries no history, as in eager

    a, b = neuron_randn(64, 8).requires_grad_(), neuron_randn(64, 8, seed=1)
    torch.compile(g, backend="neuron")(a, b).backward()
    compiled = a.grad.clone()
    a.grad = None
    g(a, b).backward()
    torch.testing.assert_close(compiled.cpu(), a.grad.cpu())
    torch.testing.assert_close(compiled.cpu(), (a + b).detach().cpu())


@pytest.mark.parametrize("strict", [False, True])
def test_torch_export_keeps_the_launch_as_one_node(strict):
    class M(torch.nn.Module):
        def forward(self, a, b):
            return torchneuron.wrap_nki(kernels.add_returning)[1](a.exp(), b) * 2

    a, b = neuron_randn(130, 8), neuron_randn(130, 8, seed=1)
    ep = torch.export.export(M(), (a, b), strict=strict)
    (node,) = _launch_nodes(ep.graph_module)
    assert not any(n.target is torch.ops.aten.empty.memory_format for n in ep.graph.nodes)  # the probe left none
    torch.testing.assert_close(ep.module()(a, b).cpu(), M()(a, b).cpu())


def test_the_launch_op_under_fake_tensor_mode_is_shape_only():
    from torchneuron.custom_ops import launch

    gc.collect()
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    with FakeTensorMode() as mode:
        a = mode.from_tensor(torch.empty(120, 70, device="neuron"))
        index, returns, written = launch.plan(kernels.copy_and_plus_one, "current", None, (launch.slot(a, True),), ())
        outs = torch.ops.torchneuron.nki_launch(index, [a])
    assert (returns, written) == (launch.TUPLE, ())
    assert all(isinstance(o, FakeTensor) and o.shape == (120, 70) and o.device.type == "neuron" for o in outs)
    assert torch.neuron.memory_allocated() == before


def test_eager_calls_make_no_launch_plan():
    from torchneuron.custom_ops import launch

    before = len(launch._PLANS)
    k = torchneuron.wrap_nki(kernels.copy_and_plus_one)
    x = neuron_randn(16, 4)
    same, plus = k[1](x)
    torch.testing.assert_close(plus.cpu(), x.cpu() + 1)
    assert len(launch._PLANS) == before
