"""DistributedDataParallel on neuron (group from init_process_group() with no backend: the default map)."""

from .launch import torchrun


def test_ddp_bucketing_no_sync_unused_parameters(tmp_path):
    reports = torchrun("ddp.py", 2, tmp_path)
    for r in reports:
        assert not r["failed"], "\n".join(r["failed"].values())
        assert r["passed"] == ["the group", "ddp matches single process", "ddp no_sync", "ddp find_unused_parameters"]
        group = r["values"]["the group"]
        assert group["backend"] == "neuron"
        assert group["default backend"] == "custom"  # the plugin, not gloo (see backend._claim_default_backend)
    assert [r["values"]["the group"]["device"] for r in reports] == [0, 1]
