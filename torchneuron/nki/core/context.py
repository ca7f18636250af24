"""The state of one kernel launch: target, grid position, on-chip capacity, instruction trace.

NKI calls are only legal inside a kernel; they find the launch through `current()`, which raises the
documented `err_nki_api_outside_of_nki_kernel` when there is none.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ERR_OUTSIDE_KERNEL, ERR_PSUM_CAPACITY, ERR_SBUF_CAPACITY, fail
from ..hardware import Target

if TYPE_CHECKING:
    from ..cost import CostModel


@dataclass
class OnChipMemory:
    """Bytes per partition in use in SBUF and PSUM, against the target's capacity."""

    target: Target
    used: dict[str, int] = field(default_factory=lambda: {"sbuf": 0, "psum": 0})
    peak: dict[str, int] = field(default_factory=lambda: {"sbuf": 0, "psum": 0})

    def capacity(self, kind: str) -> int:
        t = self.target
        return t.sbuf_bytes_per_partition if kind == "sbuf" else t.psum_bytes_per_partition

    def allocate(self, kind: str, nbytes: int, name: str) -> None:
        limit = self.capacity(kind)
        if self.used[kind] + nbytes > limit:
            code = ERR_SBUF_CAPACITY if kind == "sbuf" else ERR_PSUM_CAPACITY
            raise fail(code, f"allocating {name!r} needs {nbytes} bytes per partition in {kind.upper()}, but "
                       f"{self.used[kind]} of {limit} bytes per partition are live on {self.target.name}.",
                       "use smaller tiles, let earlier tiles go out of scope before allocating new ones, "
                       "or reuse a buffer instead of keeping tiles in a list.")
        self.used[kind] += nbytes
        self.peak[kind] = max(self.peak[kind], self.used[kind])

    def release(self, kind: str, nbytes: int) -> None:
        self.used[kind] -= nbytes


@dataclass
class KernelRun:
    """One kernel instance (one program of the SPMD grid) being simulated."""

    target: Target
    cost: CostModel
    grid: tuple[int, ...] = ()
    program_ids: tuple[int, ...] = ()
    api: str = "legacy"  # which front end launched it: "legacy" | "current"
    memory: OnChipMemory = field(init=False)
    prints: list[tuple[str, object]] = field(default_factory=list)
    # shared_hbm allocations are one tensor for the whole grid: the n-th one each instance makes is the same
    shared: list = field(default_factory=list)
    shared_next: int = 0
    rng: Any = None           # the PRNG state (ops.misc), created on first use
    reduce_regs: Any = None   # the Scalar engine's per-partition reduce registers (ops.elementwise)
    exchange: Any = None      # lnc.CoreExchange when the cores of an LNC launch run concurrently
    kernel_code: Any = None   # the launched function's code: shared_hbm tensors are allocated there only
    # The torch path (nki.torch_io): where shared_hbm allocations live (a device tensor's memory, so outputs
    # need no copy), and shape-only launches (fake tensors: storages hold no data, nothing is computed into them).
    hbm_data: Any = None      # (shape, dtype) -> flat writable array, or None for the simulator's own memory
    shape_only: bool = False

    def __post_init__(self) -> None:
        self.memory = OnChipMemory(self.target)


_state = threading.local()


def current() -> KernelRun:
    run = getattr(_state, "run", None)
    if run is None:
        raise fail(ERR_OUTSIDE_KERNEL, "an NKI language/ISA call was made outside of a running kernel.",
                   "call it from a function decorated with @nki.jit and run it through the simulator "
                   "(nki.simulate(kernel)(...) or nki.simulate_kernel(kernel, ...)).")
    return run


def active() -> KernelRun | None:
    return getattr(_state, "run", None)


@contextmanager
def running(run: KernelRun) -> Iterator[KernelRun]:
    previous = getattr(_state, "run", None)
    _state.run = run
    try:
        yield run
    finally:
        _state.run = previous
