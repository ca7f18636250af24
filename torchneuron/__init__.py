"""torchneuron: PyTorch's `neuron` device for AWS Trainium.

`import torch` loads this package through the `torch.backends` entry point (PyTorch's device autoload), so
`torch.ones(2, device="neuron")` works without importing it. Heavy parts (torch-mlir, jax) load lazily.

Importing registers the device and nothing else: a program that never touches a neuron tensor runs exactly
as without torchneuron. What the device needs from the rest of the process (where a neuron backward runs,
the exit hook for autograd's device threads, the CPU allocator that captures host-kernel outputs) is set
up at the first neuron device initialisation; module conversion is a neuron kernel (see docs/design.md).
"""

from __future__ import annotations

import os as _os
import sys as _sys

if "torch" not in _sys.modules:
    # `import torchneuron` before torch: torch's autoload would re-enter this half-imported package.
    _saved = _os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    _os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch  # noqa: F401
    finally:
        if _saved is None:
            del _os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"]
        else:
            _os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = _saved

from torchneuron import _registration  # noqa: E402

_registration.check_backend_unclaimed()

from torchneuron import _C  # noqa: E402  (registers allocator, guard, hooks and kernels at load)
from torchneuron import device as _device_module  # noqa: E402
from torchneuron._executed_ops import executed_ops, reset_executed_ops  # noqa: E402

_registration.configure(_C)
_registration.register(_device_module)

from torchneuron.device import _first_use  # noqa: E402

_first_use.defer_to_first_initialisation()

from torchneuron import distributed as _distributed  # noqa: E402  (registers the c10d backend's name only)
from torchneuron.distributed import data_parallel as _data_parallel  # noqa: E402

_distributed.register()
_data_parallel.install()  # at import: it keeps nn.DataParallel on CPU modules as it is without torchneuron

from torchneuron.device._backward_thread import backward_on_caller  # noqa: E402

__version__ = "0.1.0"
__all__ = ["executed_ops", "reset_executed_ops", "backward_on_caller", "lower", "load_lowered", "fallback_ops",
           "compile_options", "nki_op", "wrap_nki", "estimate", "__version__"]

_LAZY = {
    "lower": ("torchneuron.programs.lowered", "lower"),
    "load_lowered": ("torchneuron.programs.lowered", "load_lowered"),
    "fallback_ops": ("torchneuron.programs.fallbacks", "fallback_ops"),
    "compile_options": ("torchneuron.dynamo.options", "compile_options"),
    "nki_op": ("torchneuron.custom_ops", "nki_op"),
    "wrap_nki": ("torchneuron.custom_ops", "wrap_nki"),
    "estimate": ("torchneuron.estimator", "estimate"),
}


# Subpackages reachable as attributes (``torchneuron.nki.jit``) after a bare ``import torchneuron``; imported on
# first access, since ``import torch`` loads this package into every program.
_SUBPACKAGES = frozenset({"compiler", "custom_ops", "dynamo", "estimator", "lowering", "nki", "profiler", "programs",
                          "testing"})


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"torchneuron.{name}")
    raise AttributeError(f"module 'torchneuron' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBPACKAGES)


def _autoload() -> None:
    """Entry point PyTorch calls during `import torch`; importing this package is all it takes."""


from torchneuron import _integrations  # noqa: E402

_integrations.install()
