"""Helpers shared by the tests (imported as ``tests.helpers``; tools and benchmarks never import tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


# What a child started with ``clean=True`` inherits: none of the suite's settings (tests/nrt runs the suite with
# TORCHNEURON_RUNTIME=nrt; a user's shell has no TORCHNEURON_* at all), nor a PATH with the fake neuronx-cc.
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}


def python_env(*, clean: bool = False, **env: str | None) -> dict[str, str]:
    """The current environment (``CLEAN_ENV`` if ``clean``) with this checkout first on PYTHONPATH, updated by
    ``env`` (None removes)."""
    out = dict(CLEAN_ENV if clean else os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [out.get("PYTHONPATH")])])
    for k, v in env.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def run_python(code: str, *, timeout: float = 300, check: bool = True, clean: bool = False,
               flags: tuple[str, ...] = (), **env: str | None) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) in a fresh interpreter of this checkout (with interpreter ``flags`` such as
    ``("-W", "default")``, in ``python_env(clean=clean, **env)``); ``check`` asserts it exited 0."""
    proc = subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=python_env(clean=clean, **env), cwd=ROOT, timeout=timeout)
    if check:
        assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def run_python_json(code: str, **kwargs: Any) -> Any:
    """``run_python`` for a script whose last line of output is JSON."""
    return json.loads(run_python(code, **kwargs).stdout.strip().splitlines()[-1])


def assert_opinfo_lowers(name: str, dtype: str = "float32", max_samples: int = 2,
                         allowed: tuple[str, ...] = ("lowered",)) -> dict:
    """An OpInfo op's samples, every ATen op replayed through single-op lowering + XLA:CPU and compared with
    CPU eager (the coverage sweep's own check, torchneuron.testing.opinfo_sweep), have a status in ``allowed``."""
    from torchneuron.testing.opinfo_sweep import check_opinfo

    res = check_opinfo(name, dtype, max_samples=max_samples)
    problems = [e for e in res["events"] if e[1] not in ("lowered", "runtime")]
    assert res["status"] in allowed, f"{name} ({dtype}): {problems[:3]}"
    return res
