"""Run a child process that sees a directory as read-only, for real: root ignores ``chmod a-w``, so the
directory is bind-mounted read-only in a private mount namespace (``unshare``), as a container image or a
shared CI volume would be. Without namespaces, a non-root user gets ``chmod a-w`` instead."""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import tempfile

import pytest


@functools.cache
def _unshare_works() -> bool:
    with tempfile.TemporaryDirectory() as d:
        probe = f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && ! touch {d}/x 2>/dev/null"
        try:
            return subprocess.run(["unshare", "-rm", "sh", "-c", probe], capture_output=True,
                                  timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


def read_only_command(directory: str, argv: list[str]) -> list[str]:
    """``argv`` wrapped so that, while it runs, ``directory`` cannot be written (EROFS or EACCES)."""
    d = shlex.quote(directory)
    cmd = " ".join(shlex.quote(a) for a in argv)
    if _unshare_works():
        return ["unshare", "-rm", "sh", "-c", f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && exec {cmd}"]
    if os.geteuid() != 0:
        return ["sh", "-c", f"chmod -R a-w {d} && {cmd}; rc=$?; chmod -R u+w {d}; exit $rc"]
    pytest.skip("no way to make a directory read-only for root here (unshare -rm is not permitted)")
