"""Memory kinds and the flat storage behind every tensor.

A `Storage` is one allocation: a flat NumPy array in the storage dtype plus what the checks need (which
buffer it lives in, its partition axis, which elements have been written, PSUM accumulation state). How
much on-chip memory an allocation occupies, and for how long, is `core.memory`'s business: a storage only
carries the handle it is given there.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes


class Buffer:
    """A memory kind. Equality is by name so the legacy `nl.hbm` spelling matches `private_hbm`."""

    __slots__ = ("name", "on_chip", "is_hbm")

    def __init__(self, name: str) -> None:
        self.name = name
        self.on_chip = name in ("sbuf", "psum")   # asked for every operand of every instruction
        self.is_hbm = name.endswith("hbm")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Buffer) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

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


# Copying a slice of a prefilled array is the cheapest way to a new filled one (np.ones and np.full run
# Python code; a tile is allocated per instruction or two)
_SENTINEL_FILLED: dict[np.dtype, np.ndarray] = {}


def _uninitialised(size: int, dtype: np.dtype) -> np.ndarray:
    """`size` elements of `dtype` storage reading as the sentinel (NaN / 4), as np.full would make them."""
    filled = _SENTINEL_FILLED.get(dtype)
    if filled is None:
        filled = _SENTINEL_FILLED[dtype] = np.full(1 << 16, dtypes.sentinel(dtype), dtype=dtypes.storage_dtype(dtype))
        filled.flags.writeable = False
    if size <= filled.size:
        return filled[:size].copy()
    return np.full(size, dtypes.sentinel(dtype), dtype=dtypes.storage_dtype(dtype))


# (shape, partition axis) -> (int shape, partitions, partition stride, size): a kernel allocates the same few
# shapes over and over
_LAYOUTS: dict[tuple[tuple[int, ...], int], tuple[tuple[int, ...], int, int, int]] = {}


def _layout(shape: Any, partition_axis: int) -> tuple[tuple[int, ...], int, int, int]:
    plain = tuple(map(int, shape))
    layout = (plain, plain[partition_axis] if plain else 1, math.prod(plain[partition_axis + 1:]), math.prod(plain))
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[(plain, partition_axis)] = layout
    return layout


class Storage:
    """One allocation. `data` is flat; views compute element offsets into it."""

    __slots__ = ("uid", "shape", "dtype", "buffer", "_name", "partition_axis", "written", "pending",
                 "live", "result_mask", "loop_reduce", "loaded", "_compute", "partitions", "partition_stride",
                 "size", "_data", "last_write", "zero_fill", "__weakref__")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, buffer: Buffer, name: str = "",
                 partition_axis: int = 0, data: np.ndarray | None = None, track_writes: bool = False) -> None:
        self.uid = next(_ids)
        layout = _LAYOUTS.get((shape, partition_axis)) if type(shape) is tuple else None
        if layout is None:
            layout = _layout(shape, partition_axis)
        self.shape, self.partitions, self.partition_stride, size = layout
        self.size = size
        self.dtype = dtype
        self.buffer = buffer
        self._name = name  # the default name is made only when asked for (errors, reprs)
        self.partition_axis = partition_axis
        self._data = data  # made on first use: a result that is never materialised costs no memory
        psum = buffer.name == "psum"
        # outputs remember what was written (never-written outputs are an error); PSUM remembers it too,
        # because a matmul into never-written PSUM starts an accumulation group (`accumulate=None`, legacy
        # `psum += matmul`): it overwrites there and adds where the tile has been written
        self.written: np.ndarray | None = None
        if track_writes or psum:
            self.written = np.zeros(size, dtype=np.bool_)
        self.pending: Any = None      # a deferred PSUM accumulation group: anything with .flush()
        self.live: Any = None         # core.memory's record of where and how long it occupies the chip
        self.last_write = -1          # the launch tick of the last instruction writing it (core.hoist)
        self.zero_fill: Any = None    # legacy nl.zeros on PSUM: its memset, until a matmul folds it (KernelRun)
        self.result_mask: Any = None  # the mask= a legacy instruction wrote this (fresh) result tile under
        self.loaded = False         # an nl.load result: assigned into a tile, the DMA writes there itself
        self.loop_reduce: Any = None  # legacy nl.loop_reduce result: (op, source) to combine into its destination
        self._compute: dict[Any, np.ndarray] | None = None  # fp32 copies of views, until the next write

    @property
    def name(self) -> str:
        return self._name or f"{self.buffer.name}_{self.uid}"

    @property
    def data(self) -> np.ndarray:
        """The flat values; uninitialised memory reads as the sentinel (NaN / 4)."""
        data = self._data
        if data is None:
            data = self._data = _uninitialised(self.size, self.dtype)
        return data

    @property
    def bytes_per_partition(self) -> int:
        free = math.prod(self.shape) // max(self.partitions, 1)
        return free * dtypes.itemsize(self.dtype)

    @property
    def block_count(self) -> int:
        """Legacy block dims (before `nl.par_dim`): how many (P, F) tiles this tensor holds."""
        return math.prod(self.shape[:self.partition_axis])

    def partition_of(self, flat_offsets: np.ndarray | int) -> np.ndarray | int:
        return (flat_offsets // self.partition_stride) % max(self.partitions, 1)

    def flush(self) -> None:
        """Materialise a deferred accumulation before anyone looks at or changes the data."""
        group = self.pending
        if group is not None:
            self.pending = None
            group.flush(self)

    def changed(self) -> None:
        """The data is about to change: fp32 copies made for reads are stale."""
        self._compute = None

    def compute_copy(self, key: Any) -> np.ndarray | None:
        return self._compute.get(key) if self._compute is not None else None

    def remember_compute_copy(self, key: Any, values: np.ndarray) -> None:
        """Engines read operands as fp32; a tile read again before it is written (matmul operands reused
        across an output block) converts once. The copies kept stay under twice the storage's own size."""
        cache = self._compute
        if cache is None or (len(cache) + 1) * values.size > 2 * self.data.size + values.size:
            cache = self._compute = {}
        cache[key] = values


@dataclass(frozen=True)
class Placement:
    """A manual allocation (legacy `ncc.sbuf.mod_alloc(...)`, `ncc.sbuf.alloc(func)`, `psum.mod_alloc`): the
    buffer, and how many physical (P, F) tiles a block tensor's blocks are laid out on. Passed as the
    `buffer=` of a tensor declaration."""

    buffer: Buffer
    free_tiles: int | None = None                    # modulo allocation: blocks share this many tiles
    address_of: Any = None                           # alloc(func): block index -> (partition, byte offset)
    base_bank: int = 0                               # psum.mod_alloc: the first bank of the modulo tiles

    def physical_tiles(self, block_shape: tuple[int, ...], partitions: int, bytes_per_block: int) -> int | None:
        if self.address_of is not None:
            # AWS's compiler calls the allocation function with keywords: func(idx=, pdim_size=, fdim_size=)
            addresses = {tuple(self.address_of(idx=idx, pdim_size=partitions, fdim_size=bytes_per_block))
                         for idx in itertools.product(*(range(n) for n in block_shape))}
            return max(len(addresses), 1)
        return self.free_tiles

    def psum_banks(self, block_shape: tuple[int, ...], partitions: int, bytes_per_block: int, bank_bytes: int,
                   banks: int) -> frozenset[int] | None:
        """The PSUM banks a placed tensor names (None: not PSUM, or an address function whose answer is not
        `(bank, ...)`). A modulo allocation lays its tiles on consecutive banks from `base_bank`, each tile on
        whole banks (`num_bank_tiles`); `psum.alloc(func)` returns `(bank, partition, byte offset)` per block."""
        if self.buffer.name != "psum":
            return None
        if self.address_of is not None:
            found = set()
            for idx in itertools.product(*(range(n) for n in block_shape)):
                address = self.address_of(idx=idx, pdim_size=partitions, fdim_size=bytes_per_block)
                if not isinstance(address, (tuple, list)) or not address or not isinstance(address[0], int):
                    return None
                found.add(address[0] % banks)
            return frozenset(found)
        per_tile = max(-(-bytes_per_block // bank_bytes), 1)
        count = min(math.prod(block_shape) if block_shape else 1, self.free_tiles or 1) * per_tile
        return frozenset((self.base_bank + i) % banks for i in range(min(count, banks)))
