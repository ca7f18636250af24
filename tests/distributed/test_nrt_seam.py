"""The Trn-host transport (Neuron collectives through nrt): not built against libnrt, so its composition of
c10d's surface from the runtime's five primitives is tested against the contract fake (workers/fake_nrt.py),
and its rendezvous (NEURON_RT_ROOT_COMM_ID) against a store."""

import pytest
import torch.distributed as dist

from torchneuron.distributed import nrt_transport

from .launch import torchrun


def test_every_collective_through_the_runtime_primitives(tmp_path):
    reports = torchrun("nrt_contract.py", 2, tmp_path)
    for r in reports:
        assert not r["failed"], "\n".join(f"{k}\n{v}" for k, v in r["failed"].items())
        assert len(r["passed"]) >= 96
        assert r["values"]["transport"] == "Neuron collectives through libnrt"
        # broadcast/gather/scatter/p2p/uneven all_to_all were all built from these
        assert r["values"]["primitives"] == ["all_gather", "all_reduce", "all_to_all", "barrier", "recv",
                                             "reduce_scatter", "send"]
    ids = {r["values"]["root_comm_id"] for r in reports}
    assert len(ids) == 1 and ids.pop().rsplit(":", 1)[1].isdigit()  # one root, published by rank 0


def test_root_comm_id_from_rank_zero_or_the_environment(monkeypatch):
    store = dist.HashStore()
    monkeypatch.delenv("NEURON_RT_ROOT_COMM_ID", raising=False)
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.7")
    published = nrt_transport.root_comm_id(store, 0)
    host, port = published.rsplit(":", 1)
    assert host == "10.0.0.7" and 0 < int(port) < 65536
    assert nrt_transport.root_comm_id(store, 1) == published
    monkeypatch.setenv("NEURON_RT_ROOT_COMM_ID", "10.0.0.9:62182")
    assert nrt_transport.root_comm_id(dist.HashStore(), 1) == "10.0.0.9:62182"


def test_without_the_runtime_the_error_says_what_is_missing():
    with pytest.raises(RuntimeError, match="Neuron collectives .* are not built into torchneuron yet") as e:
        nrt_transport._runtime_collectives("h:1", 0, 2, "0")
    assert "CollectivesRuntime" in str(e.value) and "TORCHNEURON_RUNTIME=sim" in str(e.value)
