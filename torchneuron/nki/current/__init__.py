"""`nki` (NKI >= 0.3) on the torchneuron simulator: `jit`, `simulate`, `kernel[lnc]`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import typing  # noqa: F401
from ..cost import CostReport  # noqa: F401
from ..errors import ERR_INVALID_ARG, NkiError, NkiValidationError, fail  # noqa: F401
from ..kernel import Kernel, as_kernel, decorator, estimate  # noqa: F401
from . import isa, language  # noqa: F401


def jit(func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """`@nki.jit`. As in NKI 0.3, `platform_target=` is refused (set NEURON_PLATFORM_TARGET_OVERRIDE) and
    `mode=` is ignored."""
    if "platform_target" in kwargs:
        raise fail(ERR_INVALID_ARG, "nki.jit(platform_target=...) was removed in NKI 0.3.",
                   "set NEURON_PLATFORM_TARGET_OVERRIDE=trn1|trn2|trn3 (or TORCHNEURON_TARGET) instead.")
    kwargs.pop("mode", None)
    return decorator(Kernel, "current", "auto", func, kwargs)


def simulate(kernel: Any) -> Callable[..., Any]:
    """`nki.simulate(kernel)(*args)`: run on NumPy arrays or torch CPU tensors, return the same kind."""
    k = as_kernel(kernel, "current")
    if k.api != "current":
        k = Kernel(k.func, "current", k.mode, k.grid, k.options)
    return k
