"""nn.SyncBatchNorm under DDP on neuron (torchneuron/distributed/sync_batch_norm.py), against BatchNorm on the
whole batch on the CPU; the neuron group's name() and its Works' sequence numbers."""

from .launch import torchrun


def test_sync_batch_norm_and_group_identity(tmp_path):
    reports = torchrun("sync_batch_norm.py", 2, tmp_path)
    for r in reports:
        assert not r["failed"], "\n".join(r["failed"].values())
        assert r["passed"] == ["ddp sync batch norm", "uneven shards", "bf16 statistics",
                               "name and sequence numbers"]
        assert r["values"]["ddp sync batch norm"] < 1e-4 and r["values"]["uneven shards"] < 1e-4
    groups = [r["values"]["name and sequence numbers"] for r in reports]
    assert all(g["name"] == "neuron" for g in groups)
    assert groups[0]["seqs"] == groups[1]["seqs"]  # the same collective, the same number on every rank
