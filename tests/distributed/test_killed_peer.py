"""A killed (or stalled) rank makes the others raise a clear error within the group's timeout."""

import subprocess
import sys
import time

import pytest

from .launch import WORKERS, free_port, reports, worker_env

TIMEOUT_S = 3.0  # workers/killed_peer.py


def _run(mode, tmp_path):
    port = free_port()
    procs = []
    for rank in range(2):
        env = worker_env(tmp_path, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                         WORLD_SIZE="2", LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2")
        procs.append(subprocess.Popen([sys.executable, str(WORKERS / "killed_peer.py"), mode], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    start = time.monotonic()
    try:
        out0, _ = procs[0].communicate(timeout=120)
        procs[1].wait(timeout=60)
    finally:
        for p in procs:
            p.kill()
    assert procs[0].returncode == 0, out0
    assert time.monotonic() - start < 110
    (rep,) = reports(tmp_path, 1)  # the survivor's
    print(rep["values"])
    return rep["values"]


@pytest.mark.parametrize("mode", ["exit", pytest.param("stall", marks=pytest.mark.slow)])
def test_peer_failure_raises_within_timeout(mode, tmp_path):
    values = _run(mode, tmp_path)
    assert values["first"] == 2.0
    error = values["error"]
    assert error is not None, "the collective with a dead peer returned normally"
    assert "DistBackendError" in error, error
    assert "neuron process group: all_reduce failed (rank 0 of 2" in error, error
    assert f"timeout {TIMEOUT_S:g}s" in error
    # a dead peer is noticed at once (its connection closes); a stalled one when the timeout expires
    limit = 3 * TIMEOUT_S if mode == "exit" else 3 * TIMEOUT_S + 5
    assert values["elapsed"] < limit, values
    if mode == "stall":
        assert values["elapsed"] >= TIMEOUT_S * 0.8, values
