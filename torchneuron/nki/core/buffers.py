"""Memory kinds and the flat storage behind every tensor.

A `Storage` is one allocation: a flat NumPy array in the storage dtype plus what the checks need (which
buffer it lives in, its partition axis, which elements an output has had written, PSUM accumulation state).
On-chip allocations are charged against the target's SBUF/PSUM capacity while the storage is alive, so
Python's own lifetime of a tile stands in for the compiler's liveness: a tile rebound in a loop frees its
space, a tile kept in a list keeps it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes

if TYPE_CHECKING:
    from .context import KernelRun


@dataclass(frozen=True)
class Buffer:
    """A memory kind. Equality is by name so the legacy `nl.hbm` spelling matches `private_hbm`."""

    name: str

    @property
    def on_chip(self) -> bool:
        return self.name in ("sbuf", "psum")

    @property
    def is_hbm(self) -> bool:
        return self.name.endswith("hbm")

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    # Legacy kernels call `nl.sbuf` like an allocator factory in some places (`buffer=nl.sbuf`) and never
    # call it; calling it returns itself so `nki.compiler.sbuf.auto_alloc()`-style code still works.
    def __call__(self, *args: object, **kwargs: object) -> Buffer:
        return self


SBUF = Buffer("sbuf")
PSUM = Buffer("psum")
HBM = Buffer("hbm")
PRIVATE_HBM = Buffer("private_hbm")
SHARED_HBM = Buffer("shared_hbm")

_ids = itertools.count(1)


class Storage:
    """One allocation. `data` is flat; views compute element offsets into it."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, buffer: Buffer, name: str = "",
                 partition_axis: int = 0, data: np.ndarray | None = None, track_writes: bool = False) -> None:
        self.uid = next(_ids)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.buffer = buffer
        self.name = name or f"{buffer.name}_{self.uid}"
        self.partition_axis = partition_axis
        size = math.prod(self.shape)
        run = _active_run()
        # shape-only launches (torch fake tensors): zero pages that are never read or written (core.tensor)
        self.dataless = run is not None and run.shape_only
        if data is None:
            if self.dataless:
                data = np.zeros(size, dtype=dtypes.storage_dtype(dtype))
            elif buffer == SHARED_HBM and run is not None and run.hbm_data is not None:
                data = run.hbm_data(self.shape, dtype)  # kernel outputs in the caller's device memory
                if data is not None:
                    data[...] = dtypes.sentinel(dtype)
        if data is None:
            data = np.full(size, dtypes.sentinel(dtype), dtype=dtypes.storage_dtype(dtype))
        self.data = data
        self.written: np.ndarray | None = np.zeros(size, dtype=np.bool_) if track_writes else None
        # PSUM: True where the next `accumulate=None` matmul must overwrite instead of add.
        self.psum_fresh: np.ndarray | None = np.ones(size, dtype=np.bool_) if buffer == PSUM else None
        self.pending = None  # a deferred PSUM accumulation group (core.pending)

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def partitions(self) -> int:
        return self.shape[self.partition_axis] if self.shape else 1

    @property
    def partition_stride(self) -> int:
        return math.prod(self.shape[self.partition_axis + 1:])

    @property
    def bytes_per_partition(self) -> int:
        free = math.prod(self.shape) // max(self.partitions, 1)
        return free * dtypes.itemsize(self.dtype)

    def partition_of(self, flat_offsets: np.ndarray | int) -> np.ndarray | int:
        return (flat_offsets // self.partition_stride) % max(self.partitions, 1)


def _active_run() -> KernelRun | None:
    from .context import active

    return active()


def charge(run: KernelRun, storage: Storage) -> None:
    """Account an on-chip allocation against capacity for as long as the storage lives."""
    import weakref

    if not storage.buffer.on_chip:
        return
    nbytes = storage.bytes_per_partition
    if storage.buffer == PSUM:
        nbytes = -(-nbytes // 4) * 4  # psum_min_align = 4 bytes
    run.memory.allocate(storage.buffer.name, nbytes, storage.name)
    weakref.finalize(storage, run.memory.release, storage.buffer.name, nbytes)
