"""Let kernels written against `import neuronxcc.nki` / `import nki` run unmodified on the simulator.

`install_import_aliases()` (or TORCHNEURON_NKI_ALIASES=1 when torchneuron is imported) puts a finder in
front of `sys.meta_path` that answers for those names *only* when the real package cannot be found by any
other finder, so an installed Neuron SDK always wins and is never shadowed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

ALIASES: dict[str, str] = {
    "neuronxcc": "",  # a bare namespace that holds `nki`
    "neuronxcc.nki": "torchneuron.nki.legacy",
    "neuronxcc.nki.language": "torchneuron.nki.legacy.language",
    "neuronxcc.nki.language.constants": "torchneuron.nki.language_constants",
    "neuronxcc.nki.isa": "torchneuron.nki.legacy.isa",
    "neuronxcc.nki.isa.constants": "torchneuron.nki.legacy.isa.constants",
    "neuronxcc.nki.typing": "torchneuron.nki.legacy.typing",
    "neuronxcc.nki.compiler": "torchneuron.nki.legacy.compiler",
    "nki": "torchneuron.nki.current",
    "nki.language": "torchneuron.nki.current.language",
    "nki.language.constants": "torchneuron.nki.language_constants",
    "nki.isa": "torchneuron.nki.current.isa",
    "nki.isa.constants": "torchneuron.nki.current.isa.constants",
    "nki.typing": "torchneuron.nki.current.typing",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, fullname: str) -> None:
        self.fullname = fullname
        self.original_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        target = ALIASES[self.fullname]
        if not target:
            module = types.ModuleType(self.fullname, "torchneuron's stand-in for the neuronxcc package (NKI only)")
            module.__path__ = []  # type: ignore[attr-defined]
            return module
        module = importlib.import_module(target)
        self.original_spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """The target module is already initialised; aliasing must not run it a second time. The import
        system has just stamped the alias spec on it: give it back its own, so its relative imports and
        `importlib.reload` still see `torchneuron.nki...`."""
        if self.original_spec is not None:
            module.__spec__ = self.original_spec


class AliasFinder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self._real: dict[str, bool] = {}

    def real_package_exists(self, top: str) -> bool:
        if top not in self._real:
            found = False
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                try:
                    spec = finder.find_spec(top, None)
                except (ImportError, ValueError):
                    spec = None
                # A bare directory named `nki` somewhere on sys.path (e.g. a tests/nki folder) is only a
                # namespace portion; the real packages are regular packages with an __init__.py.
                found = spec is not None and spec.origin not in (None, "namespace")
                if found:
                    break
            self._real[top] = found
        return self._real[top]

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ALIASES:
            return None
        top = fullname.split(".")[0]
        ours = getattr(sys.modules.get(top), "__torchneuron_alias__", False)
        if not ours and self.real_package_exists(top):
            return None
        is_package = fullname in ("neuronxcc", "neuronxcc.nki", "nki")
        spec = importlib.util.spec_from_loader(fullname, _AliasLoader(fullname), is_package=is_package)
        return spec


_finder: AliasFinder | None = None


def install_import_aliases() -> list[str]:
    """Make `neuronxcc.nki` and `nki` importable as torchneuron's simulator front ends when those packages
    are not installed. Returns the top-level names that are now aliased (a real package is never shadowed)."""
    global _finder
    if _finder is None:
        _finder = AliasFinder()
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    aliased = [top for top in ("neuronxcc", "nki") if not _finder.real_package_exists(top)]
    for top in aliased:  # a namespace portion imported earlier (a stray `nki/` folder) must not stay cached
        cached = sys.modules.get(top)
        spec = getattr(cached, "__spec__", None)
        if cached is not None and spec is not None and spec.origin in (None, "namespace"):
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]
    for name in ("torchneuron.nki.legacy", "torchneuron.nki.current"):
        setattr(importlib.import_module(name), "__torchneuron_alias__", True)
    return aliased


def uninstall_import_aliases() -> None:
    """Remove the finder and forget the aliased modules (the real packages become visible again)."""
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in list(sys.modules):
        if name in ALIASES and (not ALIASES[name] or sys.modules[name] is sys.modules.get(ALIASES[name])):
            del sys.modules[name]
    _finder = None
