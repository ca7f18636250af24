"""Compile-cache keys.

A key is the SHA-256 of everything that can change the compiled artifact: the StableHLO text, the target,
the logical-NeuronCore config, the optimisation level, the back end, and the versions of the compiler and of
the packages that produced the IR. Nothing else (no paths, no timestamps, no source locations).
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

# Bump when the on-disk entry format or the lowering conventions change incompatibly.
FORMAT_VERSION = "1"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


@functools.cache
def package_versions() -> str:
    """Versions of the packages whose behaviour is baked into an artifact."""
    names = ("torchneuron", "torch", "torch-mlir", "jaxlib")
    return ";".join(f"{n}={_version(n)}" for n in names)


def cache_key(stablehlo: str, *, backend: str, target: str, lnc: int, opt_level: int,
              compiler_version: str, extra_flags: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    for part in (FORMAT_VERSION, backend, target, str(lnc), str(opt_level), compiler_version,
                 package_versions(), "\x1f".join(extra_flags)):
        h.update(part.encode())
        h.update(b"\x00")
    h.update(stablehlo.encode())
    return h.hexdigest()


@functools.cache
def source_fingerprint(*folders: str) -> str:
    """A hash of torchneuron's own code in these subpackages (recursively): a changed decomposition or pass must
    not reuse what an earlier checkout stored under the same package version (editable installs, development)."""
    h = hashlib.sha256()
    package = Path(__file__).parent.parent
    for folder in folders:
        for path in sorted((package / folder).rglob("*.py")):
            h.update(str(path.relative_to(package)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]
