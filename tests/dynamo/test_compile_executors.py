"""The compile suite again under each non-default simulator executor (the default, aten, runs it in this
process): every setting of ``TORCHNEURON_SIM_EXECUTOR`` must give eager's answers on the same user programs.
The HF training tests cover all three executors themselves (``test_compile_integration.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import python_env

ROOT = Path(__file__).resolve().parents[2]
SUITE = ["tests/dynamo/test_compile_graphs.py", "tests/dynamo/test_compile_models.py",
         "tests/dynamo/test_compile_memory.py"]

pytestmark = pytest.mark.sim_only


@pytest.mark.parametrize("executor", ["xla", "inductor"])
def test_compile_suite_passes_under_executor(executor):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-m", "not slow",
                           *SUITE], check=False, capture_output=True, text=True, cwd=ROOT, timeout=1800,
                          env=python_env(TORCHNEURON_SIM_EXECUTOR=executor))
    tail = "\n".join(proc.stdout.splitlines()[-40:])
    assert proc.returncode == 0, f"{tail}\n{proc.stderr[-3000:]}"
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary and "error" not in summary, summary
