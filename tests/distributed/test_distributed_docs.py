"""docs/distributed.md's training script runs under torchrun as the doc says."""

import re
import subprocess
import sys

from .launch import ROOT, worker_env

DOC = (ROOT / "docs" / "distributed.md").read_text()


def test_doc_training_script_runs_under_torchrun(tmp_path):
    (script,) = [b for b in re.findall(r"```python\n(.*?)```", DOC, re.DOTALL) if b.startswith("# train.py")]
    path = tmp_path / "train.py"
    path.write_text(script)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                           str(path)], env=worker_env(tmp_path), capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # DDP finds a timer for the device (no "Time stats are currently only collected for CPU and CUDA")
    assert "Time stats" not in proc.stderr, proc.stderr[-4000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("mean loss after 5 steps:")]
    assert 0 < float(line.split(":")[1]) < 10
