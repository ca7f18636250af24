"""How compiled graphs behave: partitions, graph breaks, shapes, mutation, strict mode, metrics, artifacts."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

import torchneuron
from tests.dynamo.conftest import assert_same
from torchneuron.dynamo.program import CompileFallbackWarning, NeuronCompileError


def _sym(n):
    a = torch.randn(n, n)
    return (a + a.T).to("neuron")


def unlowerable(x):
    y = x * 2
    w = torch.linalg.eigvalsh(y)  # aten::_linalg_eigh: no StableHLO lowering
    return w.sum() + y.sum()


def test_graph_with_an_unlowerable_op_is_split_reported_once_and_gives_eagers_answer():
    x = _sym(4)
    with pytest.warns(CompileFallbackWarning, match=r"_linalg_eigh.*test_compile_graphs.py") as record:
        got = torch.compile(unlowerable, backend="neuron")(x)
        torch.compile(unlowerable, backend="neuron")(x)  # same graph: no second report
    assert len([w for w in record if issubclass(w.category, CompileFallbackWarning)]) == 1
    assert_same(got, unlowerable(x), rtol=1e-4, atol=1e-4)
    m = torch.neuron.get_dynamo_metrics()
    assert m["partitions"] == 1 and m["eager_pieces"] == 1 and "aten::_linalg_eigh" in m["fallback_ops"]


def test_strict_mode_names_the_op_and_the_source_line(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_COMPILE_FALLBACK", "error")
    with pytest.raises(Exception, match=r"aten::_linalg_eigh.*test_compile_graphs.py\", line \d+") as info:
        torch.compile(unlowerable, backend="neuron")(_sym(4))
    assert "NeuronCompileError" in repr(info.value) or isinstance(info.value, NeuronCompileError)


def branchy(x):
    s = x.sum()
    if s.item() > 0:  # graph break: the branch is decided eagerly
        return x.relu() * 3
    return x.tanh() - 1


def test_item_branch_graph_break_gives_eagers_answer():
    f = torch.compile(branchy, backend="neuron")
    for sign in (1, -1):
        x = sign * (torch.rand(5, 7) + 0.1).to("neuron")
        assert_same(f(x), branchy(x))


def test_new_shape_recompiles_and_is_counted():
    f = torch.compile(lambda x: (x.exp() + 1).sum(-1), backend="neuron", dynamic=False)
    for n in (3, 5, 3):
        x = torch.randn(n, 4, device="neuron")
        assert_same(f(x), (x.exp() + 1).sum(-1))
    m = torch.neuron.get_dynamo_metrics()
    assert m["graphs_compiled"] == 2 and m["recompiles"] == 1  # the third call reuses the first program


def test_dynamic_true_warns_and_compiles_one_static_program_per_shape(monkeypatch):
    from torchneuron.dynamo import compiled_graph

    monkeypatch.setattr(compiled_graph, "_warned_dynamic", False)  # warned once per process
    f = torch.compile(lambda x: x.sin() * 2, backend="neuron", dynamic=True)
    with pytest.warns(UserWarning, match="static-shape"):
        for n in (3, 5, 7, 5):
            x = torch.randn(n, 2, device="neuron")
            assert_same(f(x), x.sin() * 2)
    m = torch.neuron.get_dynamo_metrics()
    assert m["graphs_compiled"] == 3 and m["recompiles"] == 2


def test_buckets_bound_the_number_of_programs_for_ragged_batches():
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to("neuron")
    f = torch.compile(model, backend="neuron", dynamic=True)
    with torchneuron.compile_options(buckets={0: [4, 8, 16]}), torch.no_grad():
        for n in (2, 3, 5, 7, 9, 12, 16):  # not 1: Dynamo always specialises size-1 dims (its own graph)
            x = torch.randn(n, 6, device="neuron")
            got = f(x)
            assert got.shape == (n, 3)
            assert_same(got, model(x))
    assert torch.neuron.get_dynamo_metrics()["graphs_compiled"] == 3  # buckets 4, 8 and 16


def test_input_mutation_is_visible_to_the_caller():
    def f(x, buf):
        buf.add_(x)
        x.mul_(2)
        return buf.sum()

    x, buf = torch.ones(3, device="neuron"), torch.zeros(3, device="neuron")
    out = torch.compile(f, backend="neuron")(x, buf)
    assert out.item() == 3.0
    assert buf.cpu().tolist() == [1.0, 1.0, 1.0] and x.cpu().tolist() == [2.0, 2.0, 2.0]


def test_views_of_inputs_are_returned_as_views():
    x = torch.randn(4, 6, device="neuron")
    v = torch.compile(lambda t: t.view(6, 4)[1:], backend="neuron")(x)
    assert v._base is x or v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    x.add_(1)
    assert_same(v, x.view(6, 4)[1:])


def test_float64_computes_in_float32_as_eager_neuron_does():
    x = torch.randn(8, dtype=torch.float64)
    f = torch.compile(lambda t: (t * 1.000001).exp().sum(), backend="neuron")
    got = f(x.to("neuron"))
    assert got.dtype == torch.float64
    assert got.item() == pytest.approx((x.float() * 1.000001).exp().sum().item(), rel=1e-6)


def test_compiler_disable_region_runs_eagerly():
    @torch.compiler.disable
    def host_side(t):
        return t.cumsum(0)

    def f(x):
        return host_side(x.relu()) * 2

    x = torch.randn(6, device="neuron")
    assert_same(torch.compile(f, backend="neuron")(x), f(x))


def test_torch_export_of_a_neuron_module():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()).to("neuron")
    x = torch.randn(2, 4, device="neuron")
    ep = torch.export.export(model, (x,))
    assert_same(ep.module()(x), model(x))


def test_sdpa_model_traces_with_the_eager_backend_too():
    q = torch.randn(2, 4, 8, 16, device="neuron")
    f = torch.compile(lambda t: F.scaled_dot_product_attention(t, t, t, is_causal=True), backend="eager")
    assert_same(f(q), F.scaled_dot_product_attention(q, q, q, is_causal=True))


def test_default_inductor_backend_on_neuron_names_the_fix():
    with pytest.raises(Exception, match=r'backend="neuron"'):
        torch.compile(lambda t: t.sin() + 1)(torch.randn(3, device="neuron"))


def test_inductor_still_compiles_cpu_programs():
    f = torch.compile(lambda t: t.sin() + 1)
    x = torch.randn(3)
    assert_same(f(x), x.sin() + 1)


def test_debug_dir_keeps_fx_graph_stablehlo_and_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_DEBUG_DIR", str(tmp_path))
    torch.compile(lambda t: t.cos() * 3, backend="neuron")(torch.randn(3, device="neuron"))
    torch.neuron.synchronize()  # the check (and its executable's dump) runs beside the program
    graph = next(p for p in tmp_path.iterdir() if p.is_dir())
    names = {p.name for p in graph.rglob("*")}
    assert {"aot_graph.py", "partition.txt", "fx_graph.py", "module.stablehlo.mlir", "executable.hlo.txt"} <= names
    (phases,) = tmp_path.glob("*-phases.json")
    seconds = json.loads(phases.read_text())
    assert set(seconds) == {"dynamo", "aot_autograd", "partition", "lowering", "torch_mlir", "executable",
                            "cross_check", "check_background"}
    assert seconds["aot_autograd"] > 0
    live = torch.neuron.get_dynamo_metrics()["phase_seconds"]  # Dynamo's own timer closes after the backend
    compiled = live["executable"] + live["check_background"]  # xla compiles in the call, aten's check beside it
    assert live["dynamo"] > 0 and compiled > 0 and live["aot_autograd"] == seconds["aot_autograd"]
    assert "stablehlo." in next(graph.rglob("module.stablehlo.mlir")).read_text()


@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention_compiles_forward_and_backward(causal):
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True).square().sum()

    leaves = [torch.randn(2, h, 6, 8) for h in (4, 2, 2)]  # 4 query heads share 2 key/value heads
    cpu = [t.clone().requires_grad_() for t in leaves]
    dev = [t.to("neuron").requires_grad_() for t in leaves]
    fn(*cpu).backward()
    out = torch.compile(fn, backend="neuron")(*dev)
    out.backward()
    assert torch.neuron.get_dynamo_metrics()["eager_pieces"] == 0
    for c, d in zip(cpu, dev):
        assert_same(d.grad, c.grad, rtol=1e-4, atol=1e-5)


def test_autocast_bfloat16_and_checkpointing_under_compile():
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).to("neuron")
    x = torch.randn(4, 16, device="neuron")
    results = []
    for compiled in (False, True):
        fn = torch.compile(model, backend="neuron") if compiled else model
        model.zero_grad()
        with torch.autocast("neuron", dtype=torch.bfloat16):
            out = checkpoint(fn, x, use_reentrant=False)
        assert out.dtype == torch.bfloat16
        out.float().square().mean().backward()
        results.append((out.float(), [p.grad.clone() for p in model.parameters()]))
    (e_out, e_grads), (c_out, c_grads) = results
    assert_same(c_out, e_out, rtol=2e-2, atol=2e-2)  # bfloat16 rounding of a different summation order
    for a, b in zip(e_grads, c_grads):
        assert_same(b, a, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("executor", ["aten", "xla"])
def test_dtype_views_unsigned_and_empty_outputs_keep_eagers_dtypes(executor, monkeypatch):
    """Found by the compiled OpInfo sweep: a view in another dtype (view_as_complex) came back in the input's
    dtype, uint64 and an empty uint8 came back signed or widened from the StableHLO, and empty_like's
    StableHLO did not compile."""
    monkeypatch.setenv("TORCHNEURON_SIM_EXECUTOR", executor)
    x = torch.randn(5, 2)
    xd = x.to("neuron")

    def fn(t):
        return (torch.view_as_complex(t) * 2, t.view(torch.int32) + 1, torch.empty_like(t).shape,
                (t > 0).to(torch.uint8).to(torch.uint64) * 3, t.new_empty_strided((3,), (1,)).dtype)

    got = torch.compile(fn, backend="neuron")(xd)
    expected = fn(x)
    assert got[0].dtype == torch.complex64 and got[3].dtype == torch.uint64
    torch.testing.assert_close(got[0].cpu(), expected[0])
    assert torch.equal(got[1].cpu(), expected[1]) and torch.equal(got[3].cpu(), expected[3])
    assert got[2] == expected[2] and got[4] == expected[4]


@pytest.mark.parametrize("fn", [torch.linalg.cholesky, torch.linalg.inv])
def test_linalg_error_checks_run_on_the_host_after_one_lowered_program(fn):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 4, generator=g)
    spd = a @ a.T + 4 * torch.eye(4)
    compiled = torch.compile(lambda t: fn(t) * 2, backend="neuron")
    assert_same(compiled(spd.to("neuron")), fn(spd) * 2, rtol=1e-4, atol=1e-5)
    m = torch.neuron.get_dynamo_metrics()
    assert m["lowered_pieces"] == 1 and m["eager_pieces"] == 0 and not m["fallback_ops"]
    singular = torch.zeros(4, 4) if fn is torch.linalg.inv else -torch.eye(4)
    with pytest.raises(torch.linalg.LinAlgError) as eager_error:
        fn(singular)
    with pytest.raises(torch.linalg.LinAlgError) as compiled_error:  # the same error as eager, from the host
        compiled(singular.to("neuron"))
    assert str(compiled_error.value) == str(eager_error.value)
