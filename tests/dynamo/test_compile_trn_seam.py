"""On a Trn host a compiled graph's pieces become NEFFs (neuronx-cc at the graph opt level, -O2), checked against
the neuronx-cc contract fake; running one needs the nrt runtime, which says so."""

from __future__ import annotations

import pytest
import torch

from torchneuron.dynamo import compiled_graph


def test_pieces_compile_to_neffs_at_O2_for_the_trn_target(fake_cc, monkeypatch):
    monkeypatch.setattr(compiled_graph, "_compile_target", lambda: "trn2")
    f = torch.compile(lambda t: (t.exp() * 2).sum(0), backend="neuron")
    with pytest.raises(Exception, match="needs the nrt runtime .*TORCHNEURON_RUNTIME=nrt"):
        f(torch.randn(4, 3, device="neuron"))
    (argv,) = fake_cc()  # one graph, one piece, one neuronx-cc call
    assert argv[argv.index("--target") + 1] == "trn2" and "-O2" in argv and argv[1].endswith(".mlir")


def test_the_sim_runtime_compiles_for_xla_cpu():
    assert compiled_graph._compile_target() == "sim"
