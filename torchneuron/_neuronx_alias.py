"""``torch_neuronx``: AWS TorchNeuron's API (``torchneuron.neuronx_api``) under AWS's import name.

Two kinds of programs ask for the name: scripts written for AWS's package (``import torch_neuronx``, often as
their first line: ``_neuronx_boot`` answers before torch is imported), and libraries that detect the device by it.

Hugging Face accelerate (``is_neuron_available``) and transformers (``is_torch_neuron_available``, used by
``TrainingArguments``, the bf16 check and the torch.compile backend choice) find Neuron only through
``importlib.util.find_spec("torch_neuronx")`` followed by ``torch.neuron.is_available()``: the name of AWS's
own package. Neither consults ``torch.accelerator`` or PyTorch's PrivateUse1 hooks for it, so without this a
Trainer on a machine with torchneuron silently trains on the CPU.

This module installs an import finder *after* every other finder on ``sys.meta_path`` (and defers to any
finder added after it): an installed ``torch_neuronx`` (AWS's package, also an editable install) is always
found first and is never shadowed. Only when no such package
exists does ``find_spec("torch_neuronx")`` answer, with a package whose names are ``torchneuron.neuronx_api``'s
and whose submodules (``torch_neuronx.memory``, ``.profiling``, ...) are the torchneuron modules implementing
them, and only while the alias applies (``TORCHNEURON_NEURONX_ALIAS``):

- ``auto`` (default): a neuron device is available and no CUDA device is, so a CUDA host keeps choosing
  CUDA in those libraries (their device checks try Neuron before CUDA in places);
- ``1``: whenever a neuron device is available; ``0``: never.

The decision is made when a library looks the name up, not at import: installing the finder costs one list
append, and a program that never asks for ``torch_neuronx`` is unchanged.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

from torchneuron import _env

NAME = "torch_neuronx"


def applies() -> bool:
    """Whether ``torch_neuronx`` should resolve to the alias now (see the module docstring)."""
    mode = _env.get(_env.NEURONX_ALIAS).strip().lower()
    if mode in ("0", "false", "off", "no"):
        return False
    if mode not in ("1", "true", "on", "yes", "auto"):
        raise ValueError(f"{_env.NEURONX_ALIAS}={mode!r}: expected auto, 1 or 0")
    import torch

    try:
        if not torch.neuron.is_available():
            return False
    except RuntimeError:  # a runtime that cannot start (TORCHNEURON_RUNTIME=nrt without libnrt) has no device
        return False
    return mode != "auto" or not torch.cuda.is_available()


_nki_aliases_installed = False  # by the alias (not by TORCHNEURON_NKI_ALIASES): uninstall() removes them


class _AliasLoader(importlib.abc.Loader):
    """``torch_neuronx``: a package whose names come from ``torchneuron.neuronx_api`` (AWS's API on torchneuron)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        from torchneuron import neuronx_api
        from torchneuron.neuronx_api import op_tracking

        module.__doc__ = neuronx_api.__doc__
        module.__version__ = neuronx_api.__version__
        module.__torchneuron_alias__ = True  # type: ignore[attr-defined]
        module.__path__ = []  # a package: its submodules come from the finder below, not from a directory
        module.__all__ = list(neuronx_api.__all__)  # type: ignore[attr-defined]
        module.__getattr__ = functools.partial(getattr, neuronx_api)  # type: ignore[attr-defined]
        module.__dir__ = neuronx_api.__dir__  # type: ignore[attr-defined]
        # AWS reports aten::linear etc. by name: counted only in programs that import torch_neuronx.
        op_tracking.track_composites()
        # AWS's package brings the `nki` package with it (its quickstart: `import torch_neuronx, nki`); here
        # `nki` and `neuronxcc.nki` become torchneuron's NKI front ends where those packages are absent.
        from torchneuron.nki import aliases

        global _nki_aliases_installed
        if aliases._finder is None or aliases._finder not in sys.meta_path:
            aliases.install_import_aliases()
            _nki_aliases_installed = True


class _SubmoduleLoader(importlib.abc.Loader):
    """``torch_neuronx.<sub>`` is the torchneuron module implementing it (one module object, not a copy)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return importlib.import_module(self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        pass  # already executed under its own name


def submodule_spec(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of ``torch_neuronx.<sub>``; None for names AWS's package does not have."""
    from torchneuron import neuronx_api

    sub = fullname[len(NAME) + 1:]
    if sub in neuronx_api.SUBMODULES:
        return importlib.machinery.ModuleSpec(fullname, _SubmoduleLoader(neuronx_api.SUBMODULES[sub]),
                                              origin="torchneuron alias")
    top = sub.split(".")[0]
    if top in neuronx_api._XLA_ERA:
        raise ModuleNotFoundError(neuronx_api.unsupported(top), name=fullname)
    return None


class AliasFinder(importlib.abc.MetaPathFinder):
    """Answers for ``torch_neuronx`` only, and only when no other finder can: it sits last, and a finder
    appended after it (an editable install's finder, added once torchneuron was imported) is asked first."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(NAME + "."):
            parent = sys.modules.get(NAME)
            return submodule_spec(fullname) if getattr(parent, "__torchneuron_alias__", False) else None
        if fullname != NAME or self._found_elsewhere(fullname, path, target) or not applies():
            return None
        return alias_spec()

    def _found_elsewhere(self, fullname: str, path: Any, target: Any) -> bool:
        finders = list(sys.meta_path)
        later = finders[finders.index(self) + 1:] if self in finders else []
        for finder in later:
            find = getattr(finder, "find_spec", None)
            if find is not None and find(fullname, path, target) is not None:
                return True  # returning None lets the import system reach that finder's spec
        return False


def alias_spec() -> importlib.machinery.ModuleSpec:
    return importlib.machinery.ModuleSpec(NAME, _AliasLoader(), origin="torchneuron alias", is_package=True)


def install() -> None:
    """Append the finder (once). Cheap: nothing is imported or decided until a library asks for the name."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(AliasFinder())


def uninstall() -> None:
    """Remove the finder and forget the alias (``reset``)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, AliasFinder)]
    reset()


def reset() -> None:
    """Forget an imported alias and undo what materialising it set up (tests use this between cases)."""
    global _nki_aliases_installed
    forget()
    if _nki_aliases_installed:
        from torchneuron.nki import aliases

        aliases.uninstall_import_aliases()
        _nki_aliases_installed = False
    if "torchneuron.neuronx_api.op_tracking" in sys.modules:
        sys.modules["torchneuron.neuronx_api.op_tracking"].untrack_composites()


def forget() -> None:
    """Drop an imported alias from sys.modules (the next import materialises it again)."""
    module = sys.modules.get(NAME)
    if module is not None and getattr(module, "__torchneuron_alias__", False):
        for name in [n for n in sys.modules if n.startswith(NAME + ".")]:
            del sys.modules[name]
        del sys.modules[NAME]
