"""The ``neuronx-cc`` back end (Trn hosts): StableHLO → NEFF with AWS's compiler, run as a subprocess.

The command line follows what AWS's backend runs (see docs/lowering.md):

    neuronx-cc compile module.mlir --framework XLA --target <trn1|trn2|trn3> --lnc <1|2> -O<1|2|3>
        --model-type transformer --auto-cast=<mode> [--auto-cast-type=<type>] [$NEURON_CC_FLAGS...]
        --output module.neff

The auto-cast setting is ``torchneuron.compile_options(auto_cast=...)`` (``lowering/auto_cast.py``; default
``none``, as AWS's backend passes); flags in ``NEURON_CC_FLAGS`` come later and so win, as neuronx-cc takes the
last of competing options.

``module.mlir`` holds the StableHLO text; the NEFF bytes are what the cache stores. Executing a NEFF needs
the ``nrt`` runtime (a Trn host, or the contract fake in ``torchneuron.testing.fake_nrt``; ``neff.py``);
everywhere else use target ``"sim"``.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import _env, targets
from ..lowering import auto_cast
from .neff import NAME, NeffExecutable

__all__ = ["NAME", "NeffExecutable", "NeuronxCcError", "command", "compile_to_bytes", "extra_flags", "find", "version"]


class NeuronxCcError(RuntimeError):
    pass


def find() -> str | None:
    """Path of ``neuronx-cc`` on PATH, or None."""
    return shutil.which("neuronx-cc")


@functools.cache
def _version_of(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "neuronx-cc-unknown"
    text = (out.stdout or out.stderr).strip().splitlines()
    return "neuronx-cc-" + (text[0].strip() if out.returncode == 0 and text else "unknown")


def version(path: str | None = None) -> str:
    path = path or find()
    return _version_of(path) if path else "neuronx-cc-absent"


def extra_flags() -> tuple[str, ...]:
    """Flags after the fixed ones: the auto-cast setting, then ``NEURON_CC_FLAGS`` (part of the cache key)."""
    return (*auto_cast.current().flags(), *shlex.split(_env.get(_env.CC_FLAGS)))


def command(module: Path, neff: Path, *, target: str, lnc: int, opt_level: int, exe: str = "neuronx-cc") -> list[str]:
    if target not in targets.TARGETS:
        raise ValueError(f"neuronx-cc target must be one of {', '.join(targets.TARGETS)}, got {target!r}")
    if lnc not in (1, 2):
        raise ValueError(f"logical NeuronCore config (--lnc) must be 1 or 2, got {lnc!r}")
    if opt_level not in (1, 2, 3):
        raise ValueError(f"neuronx-cc optimisation level must be 1, 2 or 3, got {opt_level!r}")
    return [exe, "compile", str(module), "--framework", "XLA", "--target", target, "--lnc", str(lnc),
            f"-O{opt_level}", "--model-type", "transformer", *extra_flags(),
            "--output", str(neff)]


def compile_to_bytes(stablehlo: str, *, target: str, lnc: int, opt_level: int) -> bytes:
    exe = find()
    if exe is None:
        raise NeuronxCcError(
            f"cannot compile for {target}: `neuronx-cc` is not on PATH. Install the Neuron compiler "
            "(pip package neuronx-cc from the Neuron package index, on a Trn host), or compile for the "
            "simulator with target='sim'.")
    with tempfile.TemporaryDirectory(prefix="torchneuron-cc-") as work:
        module, neff = Path(work) / "module.mlir", Path(work) / "module.neff"
        module.write_text(stablehlo)
        cmd = command(module, neff, target=target, lnc=lnc, opt_level=opt_level, exe=exe)
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
            raise NeuronxCcError(f"neuronx-cc failed (exit {proc.returncode}) for target {target}, lnc {lnc}, "
                                 f"-O{opt_level}:\n  $ {shlex.join(cmd)}\n{tail}")
        if not neff.exists():
            raise NeuronxCcError(f"neuronx-cc exited 0 but wrote no NEFF at {neff}:\n  $ {shlex.join(cmd)}")
        return neff.read_bytes()
