"""``torch_neuronx`` as seen by libraries that detect the Neuron device by that name.

Hugging Face accelerate (``is_neuron_available``) and transformers (``is_torch_neuron_available``, used by
``TrainingArguments``, the bf16 check and the torch.compile backend choice) find Neuron only through
``importlib.util.find_spec("torch_neuronx")`` followed by ``torch.neuron.is_available()``: the name of AWS's
own package. Neither consults ``torch.accelerator`` or PyTorch's PrivateUse1 hooks for it, so without this a
Trainer on a machine with torchneuron silently trains on the CPU.

This module installs an import finder *after* every other finder on ``sys.meta_path`` (and defers to any
finder added after it): an installed ``torch_neuronx`` (AWS's package, also an editable install) is always
found first and is never shadowed. Only when no such package
exists does ``find_spec("torch_neuronx")`` answer with a small alias module, and only while the alias
applies (``TORCHNEURON_NEURONX_ALIAS``):

- ``auto`` (default): a neuron device is available and no CUDA device is, so a CUDA host keeps choosing
  CUDA in those libraries (their device checks try Neuron before CUDA in places);
- ``1``: whenever a neuron device is available; ``0``: never.

The decision is made when a library looks the name up, not at import: installing the finder costs one list
append, and a program that never asks for ``torch_neuronx`` is unchanged.
"""

from __future__ import annotations

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


def _missing(attr: str) -> Any:
    raise AttributeError(
        f"module 'torch_neuronx' has no attribute {attr!r}: this 'torch_neuronx' is torchneuron's alias, there so "
        "that libraries which detect Neuron by that name (Hugging Face accelerate, transformers) find the neuron "
        "device. AWS's torch-neuronx API is not part of it; use torch.neuron and torch.compile(backend='neuron'), "
        f"or set {_env.NEURONX_ALIAS}=0 to hide the alias.")


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        # The finder exists only once torchneuron is loaded; read its version without importing the package
        # from a submodule (an import cycle).
        version = getattr(sys.modules.get("torchneuron"), "__version__", "")
        module.__doc__ = "torchneuron's stand-in for torch_neuronx (see torchneuron._neuronx_alias)."
        module.__version__ = version
        module.__torchneuron_alias__ = True  # type: ignore[attr-defined]
        module.__getattr__ = _missing  # type: ignore[attr-defined]


class AliasFinder(importlib.abc.MetaPathFinder):
    """Answers for ``torch_neuronx`` only, and only when no other finder can: it sits last, and a finder
    appended after it (an editable install's finder, added once torchneuron was imported) is asked first."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != NAME or self._found_elsewhere(fullname, path, target) or not applies():
            return None
        return importlib.machinery.ModuleSpec(NAME, _AliasLoader(), origin="torchneuron alias")

    def _found_elsewhere(self, fullname: str, path: Any, target: Any) -> bool:
        finders = list(sys.meta_path)
        later = finders[finders.index(self) + 1:] if self in finders else []
        for finder in later:
            find = getattr(finder, "find_spec", None)
            if find is not None and find(fullname, path, target) is not None:
                return True  # returning None lets the import system reach that finder's spec
        return False


def install() -> None:
    """Append the finder (once). Cheap: nothing is imported or decided until a library asks for the name."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(AliasFinder())


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, AliasFinder)]
    module = sys.modules.get(NAME)
    if module is not None and getattr(module, "__torchneuron_alias__", False):
        del sys.modules[NAME]
