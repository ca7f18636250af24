"""torchneuron.distributed.checkpoint.save_atomic: a DCP save killed or failing midway leaves the previous
checkpoint loadable and intact; a finished one replaces it and leaves nothing behind."""

import signal
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException

from tests.helpers import ROOT, python_env
from torchneuron.distributed.checkpoint import save_atomic


def _state(seed, device="neuron"):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(64, 32, generator=g).to(device), "b": torch.randn(32, generator=g).to(device),
            "step": torch.tensor(seed)}


def _load(path):
    state = {k: torch.zeros_like(v) for k, v in _state(0).items()}
    dcp.load(state, checkpoint_id=str(path))
    return state


def _assert_is(state, seed):
    for k, v in _state(seed).items():
        torch.testing.assert_close(state[k].cpu(), v.cpu(), rtol=0, atol=0)


# The user's job: saves step 2 over step 1 and is killed (SIGKILL) while the data files are being written:
# every file DCP writes is fsynced, and the first fsync kills the process.
KILLED = textwrap.dedent("""
    import os, signal, sys
    import torch, torchneuron
    from torchneuron.distributed.checkpoint import save_atomic
    g = torch.Generator().manual_seed(2)
    state = {"w": torch.randn(64, 32, generator=g).to("neuron"), "b": torch.randn(32, generator=g).to("neuron"),
             "step": torch.tensor(2)}
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
    save_atomic(state, sys.argv[1])
    print("not killed")
""")


def test_save_killed_midway_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt"
    save_atomic(_state(1), path)
    before = {f.name: f.read_bytes() for f in path.iterdir()}
    proc = subprocess.run([sys.executable, "-c", KILLED, str(path)], capture_output=True, text=True, cwd=ROOT,
                          env=python_env(), timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr[-4000:]
    (staging,) = tmp_path.glob("ckpt.tmp-*")                 # it was killed while writing there
    assert any(f.suffix == ".distcp" for f in staging.iterdir())
    assert {f.name: f.read_bytes() for f in path.iterdir()} == before
    _assert_is(_load(path), 1)
    save_atomic(_state(3), path)                             # the next save works over the debris
    _assert_is(_load(path), 3)


def test_save_that_raises_keeps_the_previous_checkpoint_and_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    save_atomic(_state(1), path)

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", disk_full)
    with pytest.raises(CheckpointException, match="No space left"):
        save_atomic(_state(2), path)
    monkeypatch.undo()
    _assert_is(_load(path), 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_save_replaces_the_previous_checkpoint_and_leaves_nothing_behind(tmp_path):
    path = tmp_path / "ckpt"
    save_atomic(_state(1), path)
    save_atomic(_state(2), path)
    _assert_is(_load(path), 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
