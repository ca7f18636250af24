"""The first ``torch.compile(backend="neuron")`` in several threads at once (a server's handler threads,
data workers each compiling their own function).

Dynamo resolves a backend name by checking its registry, loading the installed entry point, then registering
what it loaded, with no lock (``torch/_dynamo/backends/registry.py``): threads that check before any of them
has registered each register the neuron backend, and all but the first fail with ``AssertionError: duplicate
name: neuron``. Here registering the very function already registered as "neuron" again is a no-op; another
function under that name, and every other name, behave as Dynamo makes them.

Each thread looks ``register_backend`` up before it loads the entry point, so the registry must be patched
before its first lookup: when it is imported. A finder first on ``sys.meta_path`` answers for that one module
only (it finds it through the other finders and patches it once executed), once. It stays in the list: taking
it out could make another thread's import, iterating the list at that moment, skip the next finder. A program
that never imports Dynamo pays one string comparison per module it imports.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

REGISTRY = "torch._dynamo.backends.registry"
NAME = "neuron"
_lock = threading.Lock()


def tolerate_same_registration(registry: Any) -> None:
    """Wraps `registry.register_backend` (once) so that re-registering the function registered as "neuron"
    returns it instead of raising."""
    with _lock:
        original = registry.register_backend
        if getattr(original, "torchneuron_same_twice_ok", False):
            return

        @functools.wraps(original)
        def register_backend(compiler_fn: Any = None, name: str | None = None, tags: Any = ()) -> Any:
            if compiler_fn is not None and name == NAME and registry._COMPILER_FNS.get(NAME) is compiler_fn:
                return compiler_fn
            return original(compiler_fn, name, tags)

        register_backend.torchneuron_same_twice_ok = True  # type: ignore[attr-defined]
        registry.register_backend = register_backend


class _PatchOnImport:
    """Meta path finder for `REGISTRY` only: the spec the other finders give, its module patched once run."""

    done = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != REGISTRY or self.done:
            return None
        self.done = True  # a reload finds the module as Dynamo ships it
        for finder in sys.meta_path:
            if isinstance(finder, _PatchOnImport):
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            tolerate_same_registration(module)

        loader.exec_module = exec_module  # this spec's own loader instance: the module keeps its loader type
        return spec


def install() -> None:
    """Patches the registry now if Dynamo is already imported, else when it is."""
    registry = sys.modules.get(REGISTRY)
    if registry is not None:
        tolerate_same_registration(registry)
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
