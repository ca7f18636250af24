"""The nrt suite: torchneuron's Trn-host runtime against the contract fake of libnrt and neuronx-cc.

The fake is built once per test session into a temporary directory (a C compile, about a second). Each test
runs its script in a subprocess with TORCHNEURON_RUNTIME=nrt and the fake first on LD_LIBRARY_PATH and PATH:
a process has one runtime, and the pytest process runs the simulator. The subprocesses use the session's compile
cache (TORCHNEURON_CACHE_DIR, else ~/.cache/torchneuron, as the rest of the suite): every eager op on nrt is a
compiled program, so a program compiled once — by an earlier test or an earlier run — is a disk hit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchneuron.testing import fake_nrt

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def fake(tmp_path_factory) -> fake_nrt.FakeNrt:
    return fake_nrt.build(tmp_path_factory.mktemp("fake-nrt"))


@pytest.fixture(scope="session")
def nrt_cache() -> Path:
    from torchneuron.compiler.cache import default_cache_dir

    return default_cache_dir()


class Runner:
    """Runs Python code in a fresh process on the fake's nrt runtime."""

    def __init__(self, fake: fake_nrt.FakeNrt, cache: Path, tmp: Path):
        self.fake, self.cache, self.tmp = fake, cache, tmp

    def env(self, **extra: str | None) -> dict[str, str]:
        env = self.fake.env()
        for name in ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_LOGICAL_NC_CONFIG",
                     "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "NEURON_CC_FLAGS", "NEURON_COMPILER_OPT_LEVEL",
                     "TORCHNEURON_TARGET", "TORCHNEURON_EAGER", "TORCHNEURON_FALLBACK"):
            env.pop(name, None)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        env["TORCHNEURON_CACHE_DIR"] = str(self.cache)
        env["FAKE_NEURONX_CC_LOG"] = str(self.tmp / "neuronx-cc.log")
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def run(self, code: str, *, check: bool = True, timeout: int = 300,
            **env: str | None) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False, capture_output=True,
                              text=True, env=self.env(**env), timeout=timeout, cwd=self.tmp)
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
        return proc

    def compiler_calls(self) -> list[list[str]]:
        import json

        log = self.tmp / "neuronx-cc.log"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def nrt(fake, nrt_cache, tmp_path) -> Runner:
    return Runner(fake, nrt_cache, tmp_path)
