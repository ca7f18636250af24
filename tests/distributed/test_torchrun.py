"""torchrun launches: one process per logical core, LOCAL_RANK picks the device, two "nodes" on localhost
joined by torchrun's c10d rendezvous, each seeing its own slice of cores (NEURON_RT_VISIBLE_CORES)."""

import subprocess
import sys

import pytest

from .launch import WORKERS, free_port, reports, worker_env


def _nodes(tmp_path, per_node: int, slices: list[str]):
    port = free_port()
    agents = []
    for node, cores in enumerate(slices):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--nproc-per-node={per_node}",
               "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=neuron-two-nodes",
               str(WORKERS / "topology.py")]
        env = worker_env(tmp_path, NEURON_RT_VISIBLE_CORES=cores)
        agents.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = []
    try:
        for a in agents:
            outs.append(a.communicate(timeout=300)[0])
    finally:
        for a in agents:
            a.kill()
    for a, out in zip(agents, outs):
        assert a.returncode == 0, out[-6000:]
    return reports(tmp_path, 2 * per_node)


def _check(reps, per_node, slices):
    world = 2 * per_node
    for r in reps:
        v = r["values"]
        assert v["world"] == world
        assert v["sum"] == world * (world + 1) / 2
        assert v["device"] == v["local_rank"]  # LOCAL_RANK picked the device within the node's slice
        assert v["device_count"] == 2  # each node sees its 2-core slice, renumbered from neuron:0
        assert v["devices_everywhere"] == [float(i % per_node) for i in range(world)]
    assert sorted({r["values"]["visible_cores"] for r in reps}) == sorted(slices)
    by_node = {}
    for r in reps:
        by_node.setdefault(r["values"]["group_rank"], set()).add(r["values"]["visible_cores"])
    assert all(len(s) == 1 for s in by_node.values()) and len(by_node) == 2  # one slice per node


def test_two_nodes_one_process_each(tmp_path):
    slices = ["0-1", "2-3"]
    _check(_nodes(tmp_path, 1, slices), 1, slices)


@pytest.mark.slow
def test_two_nodes_two_processes_each(tmp_path):
    slices = ["0-1", "2-3"]
    _check(_nodes(tmp_path, 2, slices), 2, slices)
