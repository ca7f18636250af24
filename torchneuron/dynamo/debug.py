"""``TORCHNEURON_DEBUG_DIR``: keep what each compiled graph became, piece by piece.

Layout: ``<dir>/<pid>-graph<N>-<kind>/`` holds ``aot_graph.py`` (the whole AOT graph), ``partition.txt``
and, per lowered piece, ``piece<i>/fx_graph.py``, ``module.stablehlo.mlir`` and the executable
(``executable.hlo.txt`` from XLA:CPU on the sim, ``module.neff`` from neuronx-cc). With a debug directory,
every piece is cross-checked on its first call again, even one an earlier process checked, so its executable
is built and kept; ``<pid>-phases.json`` holds the process's compile time so far by phase (updated after
each graph Dynamo hands over, and at exit; ``torch.neuron.get_dynamo_metrics()["phase_seconds"]``).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import _env

_counter = itertools.count()


def graph_dumper(kind: str) -> Callable[[str, str, str | bytes], None]:
    """A function ``dump(sub, name, content)`` writing under this graph's folder, or a no-op."""
    root = _env.get(_env.DEBUG_DIR)
    if not root:
        return lambda sub, name, content: None
    folder = Path(root).expanduser() / f"{os.getpid()}-graph{next(_counter)}-{kind}"

    def dump(sub: str, name: str, content: str | bytes) -> None:
        d = folder / sub if sub else folder
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())

    return dump


def dump_executable(dump: Callable[[str, str | bytes], None], exe: Any) -> None:
    neff = getattr(exe, "neff", None)
    if neff is not None:
        dump("module.neff", neff)
    elif hasattr(exe, "hlo_text"):
        dump("executable.hlo.txt", exe.hlo_text())


_exit_dump = []


def dump_phases() -> None:
    root = _env.get(_env.DEBUG_DIR)
    if not root:
        return
    from . import metrics

    if not _exit_dump:  # Dynamo's timer of the current frame closes after the backend returns
        _exit_dump.append(atexit.register(_dump_phases_at_exit))

    folder = Path(root).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    phases = metrics.get_dynamo_metrics()["phase_seconds"]
    (folder / f"{os.getpid()}-phases.json").write_text(json.dumps(phases, indent=1) + "\n")


def _dump_phases_at_exit() -> None:
    with contextlib.suppress(OSError):  # the directory may be gone by then
        dump_phases()
