"""DTensor on neuron: redistribution, a tensor-parallel Linear pair, tensor-parallel GPT training."""

from .launch import torchrun


def test_dtensor_and_tensor_parallel(tmp_path):
    for r in torchrun("dtensor.py", 2, tmp_path):
        assert not r["failed"], "\n".join(r["failed"].values())
        assert r["passed"] == ["redistribution", "tensor-parallel linear pair", "tensor-parallel gpt training"]
