"""``import torch_neuronx`` as a script's first line, before ``torch`` is imported.

torchneuron's alias finder (``_neuronx_alias``) exists once torch has loaded torchneuron (PyTorch's device
autoload). A script written for AWS's package imports ``torch_neuronx`` first, so the installed
``torchneuron-neuronx.pth`` runs ``install()`` here at interpreter start-up. This module imports nothing but
the standard library and does nothing at start-up beyond appending one finder to ``sys.meta_path``; the finder
answers ``torch_neuronx`` only, and only when no other finder can (AWS's package, installed or editable, is
always found first): it then imports torchneuron (and torch) and hands the question to the alias, whose rules
(``TORCHNEURON_NEURONX_ALIAS``) decide. A program that never asks for ``torch_neuronx`` imports nothing more.

AWS's NKI examples import ``neuronxcc.nki`` (or ``nki``) first too. With ``TORCHNEURON_NKI_ALIASES=1`` those
names resolve the same way to torchneuron's NKI front ends (when the real packages are absent); without it a
lookup of ``nki`` costs nothing more than before (no torch import).
"""

from __future__ import annotations

import sys
from typing import Any

NAME = "torch_neuronx"
NKI_NAMES = ("nki", "neuronxcc")


def _nki_aliases_wanted() -> bool:
    """TORCHNEURON_NKI_ALIASES, read through torchneuron's registry without importing the package (or torch)."""
    import importlib.util
    from pathlib import Path

    name = "_torchneuron_boot_env"
    env = sys.modules.get(name)
    if env is None:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_env.py"))
        env = importlib.util.module_from_spec(spec)
        sys.modules[name] = env  # before running it: its dataclass looks its module up
        spec.loader.exec_module(env)
    return env.flag(env.NKI_ALIASES)


class BootFinder:
    """Answers ``torch_neuronx`` (and its submodules) before torch is imported, via torchneuron's alias."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        top = fullname.split(".")[0]
        if top in NKI_NAMES:
            return self._nki_spec(fullname, path, target)
        if top != NAME:
            return None
        if self._found_elsewhere(fullname, path, target):
            return None  # a real torch_neuronx (a finder appended after this one) answers
        import torchneuron  # noqa: F401  (imports torch; installs the alias finder)
        from torchneuron import _neuronx_alias

        if fullname == NAME:
            return _neuronx_alias.alias_spec() if _neuronx_alias.applies() else None
        parent = sys.modules.get(NAME)
        return _neuronx_alias.submodule_spec(fullname) if getattr(parent, "__torchneuron_alias__", False) else None

    def _nki_spec(self, fullname: str, path: Any, target: Any) -> Any:
        if "torchneuron" in sys.modules or not _nki_aliases_wanted() or self._found_elsewhere(fullname, path, target):
            return None  # once torchneuron is loaded, its own NKI finder (first on sys.meta_path) has answered
        import torchneuron  # noqa: F401  (installs the NKI import aliases: TORCHNEURON_NKI_ALIASES is set)
        from torchneuron.nki import aliases

        finder = aliases._finder  # installed by torchneuron's import (first on sys.meta_path from now on)
        return finder.find_spec(fullname, path, target) if finder is not None else None

    def _found_elsewhere(self, fullname: str, path: Any, target: Any) -> bool:
        finders = list(sys.meta_path)
        later = finders[finders.index(self) + 1:] if self in finders else []
        for finder in later:
            if type(finder).__name__ in ("BootFinder", "AliasFinder"):
                continue  # torchneuron's own finders answer the same way
            find = getattr(finder, "find_spec", None)
            if find is not None and find(fullname, path, target) is not None:
                return True
        return False


def install() -> None:
    """Append the finder once (called by ``torchneuron-neuronx.pth`` at start-up)."""
    if not any(type(f).__name__ == "BootFinder" for f in sys.meta_path):
        sys.meta_path.append(BootFinder())
