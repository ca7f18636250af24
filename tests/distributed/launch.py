"""Running a worker script as a distributed job, the way users do: torchrun (``python -m
torch.distributed.run``), or plain processes with a FileStore when a test needs to kill one of them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(out_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["WORKER_OUT"] = str(out_dir)
    env.setdefault("OMP_NUM_THREADS", "1")  # 2 cores shared by every rank
    env.pop("LOCAL_RANK", None)
    env.pop("NEURON_RT_VISIBLE_CORES", None)
    env.update(extra)
    return env


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0:
        raise AssertionError(f"{what} exited with {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n"
                             f"--- stderr\n{proc.stderr[-6000:]}")


def torchrun(script: str, nproc: int, out_dir: Path, *args: str, timeout: float = 240,
             extra_torchrun: tuple[str, ...] = (), **env: str) -> list[dict]:
    """Runs workers/<script> under torchrun --standalone; returns each rank's JSON report, by rank."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           *extra_torchrun, str(WORKERS / script), *args]
    proc = subprocess.run(cmd, env=worker_env(out_dir, **env), capture_output=True, text=True, timeout=timeout,
                          check=False)
    _check(proc, f"torchrun {script}")
    return reports(out_dir, nproc)


def reports(out_dir: Path, world: int) -> list[dict]:
    found = {}
    for f in out_dir.glob("rank*.json"):
        data = json.loads(f.read_text())
        found[data["rank"]] = data
    assert sorted(found) == list(range(world)), f"reports from ranks {sorted(found)}, expected {world}"
    return [found[r] for r in range(world)]
