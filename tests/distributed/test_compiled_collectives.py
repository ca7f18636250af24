"""Functional collectives inside torch.compile(backend="neuron") graphs, forward and backward."""

from .launch import torchrun


def test_functional_collectives_in_compiled_graphs(tmp_path):
    for r in torchrun("compiled.py", 2, tmp_path):
        assert not r["failed"], "\n".join(r["failed"].values())
        assert r["passed"] == ["compiled functional collectives", "compiled backward through all_reduce"]
