"""Every collective and dtype on the neuron process group, against a CPU reference, under torchrun."""

from .launch import torchrun


def _check(reports, world):
    for r in reports:
        assert not r["failed"], "\n".join(f"rank {r['rank']}: {k}\n{v}" for k, v in r["failed"].items())
    names = reports[0]["passed"]
    assert all(r["passed"] == names for r in reports)
    # the suite ran in full (a check silently skipped would shrink this list)
    for expected in ("all_reduce premul torch.bfloat16", "all_reduce bxor torch.int64", "reduce avg torch.int64",
                     "reduce_scatter_tensor premul torch.float32", "all_to_all_single_splits torch.bfloat16",
                     "functional torch.int64", "send_recv torch.float32", "stream order", "errors",
                     "mixed: cpu all_reduce"):
        assert expected in names, expected
    assert len(names) >= 98
    assert [r["values"]["device"] for r in reports] == list(range(world))  # LOCAL_RANK picked the device
    for r in reports:
        assert r["values"]["backend"] == "neuron"
        assert r["values"]["mixed cpu backend"] == "ProcessGroupGloo"
        assert r["values"]["mixed neuron backend"] == "_PythonBackend"
        assert r["values"]["mixed cpu result"] == [float(sum(range(world)))] * 3


def test_every_collective_two_processes(tmp_path):
    _check(torchrun("collectives.py", 2, tmp_path, "neuron"), 2)


def test_every_collective_four_processes(tmp_path):
    _check(torchrun("collectives.py", 4, tmp_path, "neuron", timeout=600), 4)
