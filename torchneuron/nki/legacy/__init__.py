"""`neuronxcc.nki` (legacy NKI 0.1) on the torchneuron simulator.

`jit` in every mode, `simulate_kernel`, `baremetal`, `benchmark` and `profile` run the kernel on the
simulator (there is no NeuronDevice here); benchmark/profile numbers come from the cost model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import typing  # noqa: F401
from ..cost import CostReport  # noqa: F401
from ..errors import ERR_INVALID_ARG, NkiError, fail  # noqa: F401
from ..kernel import BenchmarkKernel, Kernel, ProfileKernel, as_kernel, decorator, estimate  # noqa: F401
from . import compiler, isa, language  # noqa: F401
from ..instructions.tile import Tile as tensor  # noqa: F401  (`nki.tensor`: the class every kernel tensor is)

_MODES = ("auto", "simulation", "baremetal", "benchmark", "trace", "jax", "torchxla")


def jit(func: Callable[..., Any] | None = None, mode: str = "auto", **kwargs: Any) -> Any:
    """`@nki.jit` / `@nki.jit(mode="simulation")`; `platform_target=` picks the simulated generation."""
    if mode not in _MODES:
        raise fail(ERR_INVALID_ARG, f"jit mode {mode!r} is not one of {_MODES}.", "use mode='simulation'.")
    cls = BenchmarkKernel if mode == "benchmark" else Kernel
    return decorator(cls, "legacy", mode, func, kwargs)


def trace(func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """A sub-kernel: callable from inside a kernel, inlined there."""
    return decorator(Kernel, "legacy", "trace", func, kwargs)


def baremetal(kernel: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    return decorator(Kernel, "legacy", "baremetal", kernel, kwargs)


def benchmark(kernel: Callable[..., Any] | None = None, warmup: int = 10, iters: int = 100, **kwargs: Any) -> Any:
    return decorator(BenchmarkKernel, "legacy", "benchmark", kernel, {"warmup": warmup, "iters": iters, **kwargs})


def profile(kernel: Callable[..., Any] | None = None, working_directory: str | None = None, **kwargs: Any) -> Any:
    return decorator(ProfileKernel, "legacy", "profile", kernel, {"working_directory": working_directory, **kwargs})


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a kernel (or `kernel[g0, g1]`) on NumPy inputs and return its outputs as NumPy arrays."""
    k = as_kernel(kernel, "legacy")
    if k.api != "legacy":
        k = type(k)(k.func, "legacy", k.mode, k.grid, k.options)
    return k(*args, **kwargs)
