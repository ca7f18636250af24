"""On a Trn host (the nrt runtime, not built yet) NKI kernels go through the real `nki` package and compiled
graphs carry each NKI op as a StableHLO custom call; checked against contract fakes and by parsing the MLIR."""

from __future__ import annotations

import glob
import json
import sys
import types

import pytest
import torch

import torchneuron
from tests.custom_ops import kernels
from torchneuron.dynamo import compiled_graph
from torchneuron.nki import NkiError, neuron_sdk


@torchneuron.nki_op("tn_trn::add", mutates_args=())
def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return kernels.add_returning(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])).view(a.shape)


@pytest.fixture
def trn_host_with_fake_nki(monkeypatch):
    """The nrt runtime answers, and `import nki` finds the Neuron SDK's package (a recording fake)."""
    calls = []

    class FakeKernel:
        def __init__(self, func, grid=None):
            self.func, self.grid = func, grid

        def __getitem__(self, grid):
            return FakeKernel(self.func, grid)

        def __call__(self, *args, **kwargs):
            calls.append((self.func.__name__, self.grid, args))
            return "ran on the NeuronCore"

    fake = types.ModuleType("nki")
    fake.jit = lambda func: FakeKernel(func)
    monkeypatch.setitem(sys.modules, "nki", fake)
    monkeypatch.setattr(neuron_sdk, "on_trn_host", lambda: True)
    return calls


def test_the_sim_runtime_is_not_a_trn_host():
    assert neuron_sdk.on_trn_host() is False


def test_eager_launch_goes_to_the_real_nki_package(trn_host_with_fake_nki):
    a = torch.ones(4, 4, device="neuron")
    assert kernels.add_returning(a, a) == "ran on the NeuronCore"
    assert kernels.add_returning[2](a, a) == "ran on the NeuronCore"
    (name, grid, args), (_, grid2, _) = trn_host_with_fake_nki
    assert name == "add_returning" and grid is None and args[0] is a and grid2 == 2


def test_without_the_neuron_sdk_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(neuron_sdk, "on_trn_host", lambda: True)
    monkeypatch.setitem(sys.modules, "nki", None)  # `import nki` fails
    with pytest.raises(NkiError, match="Neuron SDK's `nki` package, which is not installed.*pip install nki"):
        kernels.add_returning(torch.ones(4, 4, device="neuron"), torch.ones(4, 4, device="neuron"))


def _parse(text):
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        body = module.body.operations[0].regions[0].blocks[0].operations
        call = body[0]
        return (call.operation.name, str(call.attributes["call_target_name"]), len(call.operands),
                [str(r.type) for r in call.results], str(call.attributes["backend_config"]).strip('"'))


def test_custom_call_module_is_valid_stablehlo_carrying_the_launches():
    specs = [neuron_sdk.Spec((130, 8), "bfloat16"), neuron_sdk.Spec((8,), "float32")]
    config = neuron_sdk.backend_config("ns::op", [{"kernel": {"name": "k"}, "grid": [2]}])
    name, target, n_in, results, cfg = _parse(neuron_sdk.custom_call_module("ns::op", specs, specs[:1], config))
    assert (name, target, n_in, results) == ("stablehlo.custom_call", '"AwsNeuronCustomNativeKernel"', 2,
                                             ["tensor<130x8xbf16>"])
    assert neuron_sdk.decode_backend_config(cfg) == {"format": "torchneuron-nki-op/1", "op": "ns::op",
                                                   "launches": [{"kernel": {"name": "k"}, "grid": [2]}]}


def test_compiled_graph_on_trn_compiles_the_op_as_a_custom_call(fake_cc, monkeypatch, tmp_path):
    import torch._dynamo

    torch._dynamo.reset()
    monkeypatch.setattr(compiled_graph, "_compile_target", lambda: "trn2")
    monkeypatch.setenv("TORCHNEURON_DEBUG_DIR", str(tmp_path / "dbg"))
    f = torch.compile(lambda a, b: add(a.exp(), b) * 2, backend="neuron")
    with pytest.raises(Exception, match="loading a NEFF needs the nrt runtime"):
        f(torch.randn(4, 130, 8, device="neuron"), torch.randn(4, 130, 8, device="neuron"))
    argvs = fake_cc()
    assert argvs and all(argv[argv.index("--target") + 1] == "trn2" for argv in argvs)  # pieces + custom call
    (path,) = glob.glob(str(tmp_path / "dbg" / "**" / "nki0.stablehlo.mlir"), recursive=True)
    with open(path) as f:
        _, target, n_in, results, cfg = _parse(f.read())
    assert target == '"AwsNeuronCustomNativeKernel"' and n_in == 2 and results == ["tensor<4x130x8xf32>"]
    doc = neuron_sdk.decode_backend_config(cfg)
    (launch,) = doc["launches"]
    assert doc["op"] == "tn_trn::add" and launch["kernel"]["name"] == "add_returning"
    assert launch["kernel"]["module"] == "tests.custom_ops.kernels"
    assert "def add_returning" in launch["kernel"]["source"]
    assert [a["tensor"]["from"] for a in launch["args"]] == ["input:0:view([520, 8],[8, 1],0)",
                                                             "input:1:view([520, 8],[8, 1],0)"]
    assert json.dumps(doc)  # plain JSON all the way down
    torch._dynamo.reset()


def test_a_bare_wrap_nki_launch_compiles_as_a_custom_call_too(fake_cc, monkeypatch, tmp_path):
    import torch._dynamo

    torch._dynamo.reset()
    monkeypatch.setattr(compiled_graph, "_compile_target", lambda: "trn2")
    monkeypatch.setenv("TORCHNEURON_DEBUG_DIR", str(tmp_path / "dbg"))
    k = torchneuron.wrap_nki(kernels.add_returning)
    f = torch.compile(lambda a, b: k[1](a.exp(), b) * 2, backend="neuron", fullgraph=True)
    with pytest.raises(Exception, match="loading a NEFF needs the nrt runtime"):
        f(torch.randn(130, 8, device="neuron"), torch.randn(130, 8, device="neuron"))
    (path,) = glob.glob(str(tmp_path / "dbg" / "**" / "nki0.stablehlo.mlir"), recursive=True)
    with open(path) as f:
        _, target, n_in, results, cfg = _parse(f.read())
    assert target == '"AwsNeuronCustomNativeKernel"' and n_in == 2 and results == ["tensor<130x8xf32>"]
    doc = neuron_sdk.decode_backend_config(cfg)
    (launch,) = doc["launches"]
    assert doc["op"] == "torchneuron::nki_launch" and launch["kernel"]["name"] == "add_returning"
    assert launch["grid"] == [1] and [a["tensor"]["from"] for a in launch["args"]] == ["input:0", "input:1"]
    torch._dynamo.reset()
