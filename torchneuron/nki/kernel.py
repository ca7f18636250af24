"""Kernel objects and the ways to run them: `jit` (both API generations), grids (`kernel[g0, g1]`,
`kernel[lnc]`), `simulate` / `simulate_kernel`, `baremetal`, `benchmark`, `profile`, `estimate`.

Without a Trainium host every path executes on the simulator; `benchmark` and `profile` report the cost
model's estimate in place of a measurement, and say so in their results.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import cost, hardware
from .. import _env
from .core import context
from .errors import ERR_GRID, ERR_INVALID_ARG, ERR_NESTED_SPMD, fail
from .runner import GridDim, Launch, launch
from .typing import TensorType


class nc:
    """`nl.nc(n)`: a grid dimension spread over n logical NeuronCores (`kernel[nl.nc(2) * 4]`)."""

    def __init__(self, cores: int) -> None:
        self.cores = int(cores)

    def __mul__(self, n: int) -> spmd_dim:
        return spmd_dim(self, n)       # nl.nc(2) * 2 == nl.spmd_dim(nl.nc(2), 2)

    def __rmul__(self, n: int) -> spmd_dim:
        return spmd_dim(n, self)       # 2 * nl.nc(2) == nl.spmd_dim(2, nl.nc(2))

    def __repr__(self) -> str:
        return f"nc({self.cores})"


class spmd_dim:
    """`nl.spmd_dim(a, b)`: a grid dimension of a * b programs, one factor being `nl.nc(n)` cores. The
    order is the placement (AWS's SPMD example): `spmd_dim(nl.nc(2), 2)` gives core 0 programs 0 and 1,
    core 1 programs 2 and 3; `spmd_dim(2, nl.nc(2))` alternates (core 0: 0 and 2, core 1: 1 and 3)."""

    def __init__(self, first: Any, second: Any = 1) -> None:
        if isinstance(first, nc) and isinstance(second, nc):
            raise fail(ERR_GRID, "nl.spmd_dim of two nl.nc factors.", "shard one grid dimension over one nl.nc(n).")
        if isinstance(first, nc):
            self.cores, self.size, self.cores_major = first.cores, first.cores * int(second), True
        elif isinstance(second, nc):
            self.cores, self.size, self.cores_major = second.cores, int(first) * second.cores, False
        else:
            self.cores, self.size, self.cores_major = 1, int(first) * int(second), False


def _grid_dims(key: Any, api: str) -> tuple[GridDim, ...]:
    items = key if isinstance(key, tuple) else (key,)
    dims = []
    for k in items:
        if isinstance(k, nc):
            dims.append(GridDim(k.cores, k.cores))
        elif isinstance(k, spmd_dim):
            if k.size < 1:
                raise fail(ERR_GRID, f"spmd dim of {k.size} programs.", "launch at least one program per dim.")
            dims.append(GridDim(k.size, k.cores, k.cores_major))
        else:
            n = int(k)
            if n < 1:
                raise fail(ERR_GRID, f"grid dimension {n} must be >= 1.", "launch at least one program per dim.")
            dims.append(GridDim(n))
    if api == "current":
        if len(dims) != 1 or dims[0].size not in (1, 2):
            raise fail(ERR_GRID, f"kernel[{key}]: `nki` kernels launch as kernel[lnc] with lnc 1 or 2.",
                       "use kernel[1] or kernel[2] (the logical NeuronCore degree); multi-dim SPMD grids are the "
                       "legacy neuronxcc.nki API.")
        dims = [GridDim(dims[0].size, dims[0].size)]
    return tuple(dims)


class Kernel:
    """A function decorated with `jit`: call it (runs on the simulator) or index a grid first."""

    # A kernel is never a test, whatever its name (AWS's SDK tests name one `test_nl_broadcast`): without
    # this, pytest follows `__wrapped__` to the function and collects it as a test with missing fixtures.
    __test__ = False

    def __init__(self, func: Callable[..., Any], api: str = "legacy", mode: str = "auto",
                 grid: tuple[GridDim, ...] = (), options: dict[str, Any] | None = None) -> None:
        if isinstance(func, Kernel):  # nki.benchmark(k) keeps what k was made with: options, schedule, grid
            options = {**func.options, **(options or {})}
            grid = grid or func.grid
            func = func.func
        self.func = func
        self.api = api
        self.mode = mode
        self.grid = grid
        self.options = dict(options or {})
        self.last_launch: Launch | None = None
        functools.update_wrapper(self, func)

    def __getitem__(self, key: Any) -> Kernel:
        if self.grid:
            raise fail(ERR_GRID, "the kernel already has a launch grid.", "index the undecorated kernel once.")
        return type(self)(self.func, self.api, self.mode, _grid_dims(key, self.api), self.options)

    def run(self, *args: Any, **kwargs: Any) -> Launch:
        self.last_launch = launch(self.func, args, kwargs, self.grid, self.api, self._target(),
                                  self.options.get("schedule", ()))
        return self.last_launch

    def with_schedule(self, edges: Any) -> Kernel:
        """This kernel with scheduling edges between its named instructions (`name=` of nki.isa calls): each
        pair (instruction, producer or [producers]) issues the first after the others. The cost model's
        scheduler honours them; values do not depend on them."""
        pairs = []
        for pair in edges:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise fail(ERR_INVALID_ARG, f"with_schedule: {pair!r} is not a pair (instruction, producers).",
                           "pass a list of pairs, e.g. [('plus1', 'recip')] or [('out', ['a', 'b'])].")
            consumer, producers = pair
            producers = (producers,) if isinstance(producers, str) else tuple(producers)
            if not isinstance(consumer, str) or not all(isinstance(p, str) for p in producers):
                raise fail(ERR_INVALID_ARG, f"with_schedule: {pair!r} names instructions by something else than "
                           "strings.", "name instructions with name='...' and pass those names.")
            pairs.append((consumer, producers))
        options = dict(self.options)
        options["schedule"] = tuple(options.get("schedule", ())) + tuple(pairs)
        return type(self)(self.func, self.api, self.mode, self.grid, options)

    def _target(self) -> Any:
        """Legacy `jit(platform_target="trn2")` picks the generation, unless NEURON_PLATFORM_TARGET_OVERRIDE
        (AWS's switch, which overrides it there too) is set."""
        name = self.options.get("platform_target")
        if name is None or _env.get(_env.NKI_TARGET).strip():
            return None
        return hardware.target_named(str(name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.active() is not None:  # a kernel calling a kernel: inline it as a sub-kernel
            if self.grid:
                raise fail(ERR_NESTED_SPMD, f"kernel {self.func.__name__} with an SPMD grid is called from inside a "
                           "kernel.", "call it without a grid; only the outermost kernel has a grid.")
            return self.func(*args, **kwargs)
        launch = self.run(*args, **kwargs)
        # the kernel keeps its last report, not its outputs: those may be device tensors the caller frees
        results, launch.results = launch.results, None
        return results

    @property
    def report(self) -> cost.CostReport | None:
        return self.last_launch.report if self.last_launch else None

    def __repr__(self) -> str:
        grid = f"[{', '.join(str(d.size) for d in self.grid)}]" if self.grid else ""
        return f"<nki kernel {self.func.__name__}{grid} ({self.api} API, mode={self.mode})>"


def as_kernel(kernel: Any, api: str) -> Kernel:
    if isinstance(kernel, Kernel):
        return kernel
    if callable(kernel):
        return Kernel(kernel, api)
    raise fail(ERR_INVALID_ARG, f"{kernel!r} is not a kernel.", "pass a function decorated with @nki.jit.")


def _placeholders(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`nt.tensor[[8192, 4096], nl.bfloat16]` may stand in for an array where values do not matter."""
    args = tuple(a.placeholder() if isinstance(a, TensorType) else a for a in args)
    return args, {k: v.placeholder() if isinstance(v, TensorType) else v for k, v in kwargs.items()}


def estimate(kernel: Any, *args: Any, **kwargs: Any) -> cost.CostReport:
    """Run `kernel(*args)` on the simulator and return the cost model's report for the launch. Arguments may
    be `nt.tensor[[shape], dtype]` annotations instead of arrays (zeros are simulated)."""
    k = as_kernel(kernel, getattr(kernel, "api", "current"))
    args, kwargs = _placeholders(args, kwargs)
    return k.run(*args, **kwargs).report


# ---- benchmark / profile results (shaped like neuronxcc.nki's) ----

@dataclass
class LatencyStats:
    """Latency percentiles in microseconds. The cost model is deterministic, so every percentile is the
    estimate; `estimated` says these numbers are modelled, not measured."""

    latency_us: float
    estimated: bool = True

    def get_latency_percentile(self, percentile: int) -> float:
        if not 0 <= int(percentile) <= 100:
            raise fail(ERR_INVALID_ARG, f"percentile {percentile} outside [0, 100].", "use e.g. 50 or 99.")
        return self.latency_us


@dataclass
class BenchmarkResult:
    nc_latency: LatencyStats
    report: cost.CostReport


class BenchmarkKernel(Kernel):
    """`nki.benchmark(...)(kernel)`: runs like baremetal and keeps `benchmark_result`."""

    benchmark_result: BenchmarkResult | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # neuron-bench ignores input values, so `nt.tensor[[8192, 4096], nl.bfloat16]` may stand in for an array
        args, kwargs = _placeholders(args, kwargs)
        out = super().__call__(*args, **kwargs)
        if self.last_launch is not None:
            r = self.last_launch.report
            self.benchmark_result = BenchmarkResult(LatencyStats(r.latency_us), r)
        return out


class ProfileKernel(Kernel):
    """`nki.profile(working_directory=...)(kernel)`: runs and writes the cost report as JSON there."""

    profile_path: str | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # a profile, like a benchmark, ignores input values: AWS's profiling example passes
        # `tensor[[250, 512], nl.float32]` for the input
        args, kwargs = _placeholders(args, kwargs)
        out = super().__call__(*args, **kwargs)
        wd = self.options.get("working_directory") or os.getcwd()
        os.makedirs(wd, exist_ok=True)
        name = os.path.splitext(self.options.get("save_trace_name") or "profile.ntff")[0] + ".json"
        path = os.path.join(wd, name)
        if os.path.exists(path) and not self.options.get("overwrite", False):  # neuronxcc.nki.profile default
            raise fail(ERR_INVALID_ARG, f"{path} exists.", "pass overwrite=True or another save_trace_name.")
        assert self.last_launch is not None
        with open(path, "w") as f:
            summary = {"kernel": self.func.__name__, "estimated": True, **self.last_launch.report.to_dict()}
            json.dump(summary, f, indent=2)
        self.profile_path = path
        return out


def decorator(cls: type[Kernel], api: str, mode: str, func: Callable[..., Any] | None,
              options: dict[str, Any]) -> Any:
    if func is None:
        return lambda f: cls(f, api, mode, options=options)
    return cls(func, api, mode, options=options)
