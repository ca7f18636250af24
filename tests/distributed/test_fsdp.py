"""FSDP2 fully_shard (fp32 and a bf16 mixed-precision policy) and torch.distributed.checkpoint on neuron."""

from .launch import torchrun


def test_fsdp2_training_and_checkpoint(tmp_path):
    for r in torchrun("fsdp.py", 2, tmp_path):
        assert not r["failed"], "\n".join(r["failed"].values())
        assert r["passed"] == ["fsdp2 matches single process", "fsdp2 mixed precision", "dcp round trip"]
