"""On-chip capacity as the compiler's allocator sees it: a tile occupies SBUF/PSUM from the first
instruction that touches it to the last one, not from `nl.ndarray` to the end of its Python life.

So a tile rebound in a loop does not overlap its successor, a temporary that only feeds an assignment
(`t[...] = nl.load(...)`) lives for one instruction, and tiles kept in a list and used later all count.
Legacy block tensors (`nl.ndarray((8, nl.par_dim(128), 512))`) are logical: each block is its own live
range, as the migration guide describes; `mod_alloc(num_free_tiles=(n,))` and `alloc(func)` tensors occupy
exactly the physical tiles they name. After the kernel ran, a sweep over the live ranges finds the peak per
partition; above the target's capacity it raises the documented error at the allocation that overflowed.
"""

from __future__ import annotations

import bisect
import heapq
import math
import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    ERR_PSUM_CAPACITY,
    ERR_SBUF_CAPACITY,
    NkiError,
    _SIMULATOR_FILES,
    SourceLocation,
    is_simulator_file,
)

if TYPE_CHECKING:
    from ..hardware import Target
    from .buffers import Storage

PSUM_MIN_ALIGN = 4  # bytes (KLR's psum_min_align)
_TICK_AND_KIND = operator.itemgetter(0, 1)  # live-range events sort by instruction, ends before starts


class Interval:
    """One live range: `nbytes` per partition from instruction `first` to `last` (inclusive)."""

    __slots__ = ("first", "last", "uses", "nbytes", "kind", "_name", "where", "banks")

    def __init__(self, nbytes: int, kind: str, name: str | tuple[str, int], where: Any) -> None:
        self.banks: frozenset[int] | None = None  # a placed PSUM tensor: the banks it names
        self.first = -1
        self.last = -1
        self.uses: list[int] = []  # every instruction touching it, in order (where a spilled range comes back)
        self.nbytes = nbytes
        self.kind = kind
        self._name = name  # or (buffer name, storage uid): the storage's default name, made if reported
        self.where = where

    @property
    def name(self) -> str:
        name = self._name
        return name if isinstance(name, str) else f"{name[0]}_{name[1]}"


class Whole:
    """A plain tile: one live range for the whole allocation."""

    __slots__ = ("interval",)

    def __init__(self, interval: Interval) -> None:
        self.interval = interval

    def touch(self, tick: int, view: Any) -> None:
        iv = self.interval
        if iv.first < 0:
            iv.first = tick
        if iv.last != tick:
            iv.uses.append(tick)
        iv.last = tick


class Blocks:
    """A block tensor under automatic allocation: every block has its own live range."""

    __slots__ = ("block_elems", "nbytes", "kind", "name", "where", "intervals", "new")

    def __init__(self, block_elems: int, nbytes: int, kind: str, name: str, where: Any,
                 new: Callable[[Interval], None]) -> None:
        self.block_elems = block_elems
        self.nbytes = nbytes
        self.kind, self.name, self.where = kind, name, where
        self.intervals: dict[int, Interval] = {}
        self.new = new

    def touch(self, tick: int, view: Any) -> range | np.ndarray:
        """Makes the blocks `view` reaches live at `tick`; returns them."""
        blocks = blocks_of(view, self.block_elems)
        for b in blocks:
            iv = self.intervals.get(b)
            if iv is None:
                iv = self.intervals[b] = Interval(self.nbytes, self.kind, f"{self.name}[{b}]", self.where)
                self.new(iv)
                iv.first = tick
            if iv.last != tick:
                iv.uses.append(tick)
            iv.last = tick
        return blocks


def blocks_of(view: Any, block_elems: int) -> range | np.ndarray:
    """The blocks a view reaches (strided views: every block between its lowest and highest element)."""
    if view is None:
        return range(0)
    if view.index is not None:
        return np.unique(view.index // block_elems) if view.index.size else range(0)
    lo = hi = view.offset
    for n, s in zip(view.shape, view.strides or ()):
        if n > 1:
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
    return range(lo // block_elems, hi // block_elems + 1)


@dataclass
class OnChipMemory:
    """Live ranges of one kernel instance's SBUF and PSUM allocations, against the target's capacity."""

    target: Target
    tick: int = 0
    intervals: list[Interval] = field(default_factory=list)
    peak: dict[str, int] = field(default_factory=lambda: {"sbuf": 0, "psum": 0})
    # Legacy (neuronxcc) kernels: the compiler places every instruction's result, so a result may take the
    # room of an operand read for the last time, and SBUF that overflows is spilled to HBM (the Mamba
    # tutorial profiles that traffic). Current-API kernels allocate each `dst` themselves, and overflow is
    # refused (no public evidence that the NKI compiler spills them).
    compiler_allocates: bool = False
    spilled: list[Interval] = field(default_factory=list)  # PSUM live ranges moved to SBUF by finish()
    sbuf_spills: list[int] = field(default_factory=list)  # bytes per partition of each SBUF spill + reload

    def capacity(self, kind: str) -> int:
        t = self.target
        return t.sbuf_bytes_per_partition if kind == "sbuf" else t.psum_bytes_per_partition

    def place(self, storage: Storage, physical_tiles: int | None = None) -> None:
        """Register an on-chip allocation. `physical_tiles` is set for manually placed block tensors."""
        kind = storage.buffer.name
        paxis = storage.partition_axis
        blocks = math.prod(storage.shape[:paxis]) if paxis else 1  # storage.block_count
        per_block = storage.bytes_per_partition // max(blocks, 1)
        if kind == "psum":
            per_block = -(-per_block // PSUM_MIN_ALIGN) * PSUM_MIN_ALIGN
        where = allocation_site()
        if blocks > 1 and physical_tiles is None:
            block_elems = math.prod(storage.shape[storage.partition_axis:])
            storage.live = Blocks(block_elems, per_block, kind, storage.name, where, self.intervals.append)
            return
        tiles = blocks if physical_tiles is None else min(physical_tiles, blocks)
        iv = Interval(per_block * max(tiles, 1), kind, storage._name or (kind, storage.uid), where)
        self.intervals.append(iv)
        storage.live = Whole(iv)

    def fold(self, storage: Storage) -> None:
        """The result the last instruction produced was written straight into the tile it is assigned to
        (`t[...] = nisa.nc_matmul(...)`, `psum += nc_matmul(...)`): it never needed room of its own, so its
        range leaves the sweep (a later read of it starts a range there). Only for a storage `produced_last`
        named, asked before the move that carried its readiness touched it."""
        iv = storage.live.interval
        iv.first = iv.last = -1
        iv.uses.clear()

    def produced_last(self, storage: Storage) -> bool:
        """Whether the most recent instruction was the last (so far the only) one to touch `storage`."""
        live = storage.live
        return isinstance(live, Whole) and live.interval.first == live.interval.last == self.tick

    def finish(self) -> list[Interval]:
        """Sweep the live ranges: record the peak per buffer. PSUM that overflows is spilled as AWS's
        compiler does (the attention tutorial's v3/v9 keep more PSUM tiles live than the 8 banks hold):
        each tile that does not fit lives in SBUF instead (counted there) and is returned, so the launch
        charges its spill and fill copies. SBUF that overflows is spilled to HBM (the Mamba tutorial's v2 at
        seq_len 8192; legacy kernels only, `compiler_allocates`): `sbuf_spills` lists the bytes per partition of each
        spill-and-reload round trip, which the launch charges as DMA traffic. Refused: a single tile larger
        than its whole buffer, and SBUF overflow in current-API kernels."""
        spilled: list[Interval] = []
        events: list[tuple[int, int, Interval]] = []
        for iv in self.intervals:
            if iv.kind == "psum" and iv.first >= 0:
                events.append((iv.first, 1, iv))
                events.append((iv.last + 1, 0, iv))  # ends sort before starts at the same instruction
        events.sort(key=_TICK_AND_KIND)
        used = peak = 0
        live: set[Interval] = set()
        limit = self.capacity("psum")
        bank_bytes = self.target.psum_bank_bytes
        # Placed tensors (psum.mod_alloc / psum.alloc) sit on the banks the kernel named: tensors named on the
        # same bank share it (the kernel orders their uses), and the compiler never moves or spills them.
        placed: dict[int, int] = {}  # bank -> live placed tensors on it
        for _, starts, iv in events:
            if iv.banks is not None:
                before = len(placed) * bank_bytes
                for b in iv.banks:
                    n = placed.get(b, 0) + (1 if starts else -1)
                    if n:
                        placed[b] = n
                    else:
                        placed.pop(b, None)
                used += len(placed) * bank_bytes - before
                peak = max(peak, used)
                continue
            if not starts:
                if iv in live:  # (a spilled PSUM range never was)
                    used -= iv.nbytes
                    live.discard(iv)
                continue
            if used + iv.nbytes > limit and iv.nbytes <= limit:
                iv.kind = "sbuf"  # spilled: the SBUF sweep (next) counts it
                spilled.append(iv)
                continue
            used += iv.nbytes
            live.add(iv)
            if used > peak:
                peak = used
            if used > limit:
                raise self._overflow("psum", iv, used - iv.nbytes, limit, live)
        self.peak["psum"] = peak
        self.spilled = spilled
        self._sweep_sbuf()
        return spilled

    def room_taken_by_last_reader(self, iv: Interval) -> bool:
        """Under the compiler's allocation a result may take the room of an SBUF operand read for the last
        time (engines stream element by element): a range read last by instruction t ends before t's results
        start. One only ever written still needs its room at that instruction."""
        return self.compiler_allocates and iv.kind == "sbuf" and iv.last > iv.first

    def _sweep_sbuf(self) -> None:
        """SBUF live ranges against the capacity. When an instruction needs more than is free, the tiles
        it does not touch whose next use is furthest away (Belady's choice, which a compiler's static
        allocator can make) are spilled to HBM and reloaded just before that use, where they need room again."""
        heap: list[tuple[int, int, int, Interval]] = []
        n = 0
        for iv in self.intervals:
            if iv.kind == "sbuf" and iv.first >= 0:
                heap.append((iv.first, 1, n, iv))
                heap.append((iv.last if self.room_taken_by_last_reader(iv) else iv.last + 1, 0, n + 1, iv))
                n += 2
        heapq.heapify(heap)
        used = peak = 0
        live: set[Interval] = set()
        limit = self.capacity("sbuf")
        spills: list[int] = []
        while heap:
            tick, starts, _, iv = heapq.heappop(heap)
            if not starts:
                if iv in live:
                    used -= iv.nbytes
                    live.discard(iv)
                continue
            if iv in live or iv.last < tick:  # (a reload of a range that has ended)
                continue
            if iv.nbytes > limit:
                raise self._overflow("sbuf", iv, used, limit, live)
            if used + iv.nbytes > limit and not self.compiler_allocates:
                raise self._overflow("sbuf", iv, used, limit, live)
            while used + iv.nbytes > limit:
                victim, back = None, -1
                for v in live:
                    nxt = _next_use(v, tick)
                    if nxt > back:
                        victim, back = v, nxt
                if victim is None:  # every live tile is an operand of this instruction
                    raise self._overflow("sbuf", iv, used, limit, live)
                live.discard(victim)
                used -= victim.nbytes
                spills.append(victim.nbytes)
                n += 1
                heapq.heappush(heap, (back, 1, n, victim))
            used += iv.nbytes
            live.add(iv)
            if tick > iv.first:
                # a reload: its end event may already have been taken while it was out (reloaded for its
                # last use, that event sorts first), so it ends again at its own end, never before now
                end = iv.last if self.room_taken_by_last_reader(iv) else iv.last + 1
                n += 1
                heapq.heappush(heap, (max(end, tick), 0, n, iv))
            if used > peak:
                peak = used
        self.peak["sbuf"] = peak
        self.sbuf_spills = spills

    def _overflow(self, kind: str, iv: Interval, before: int, limit: int, live: set[Interval]) -> NkiError:
        others = sorted((o for o in live if o is not iv), key=lambda o: -o.nbytes)[:4]
        listed = ", ".join(f"{o.name!r} {o.nbytes} B" for o in others)
        code = ERR_SBUF_CAPACITY if kind == "sbuf" else ERR_PSUM_CAPACITY
        return NkiError(code, f"allocating {iv.name!r} needs {iv.nbytes} bytes per partition in {kind.upper()}, but "
                        f"{before} of {limit} bytes per partition are live on {self.target.name} (largest live: "
                        f"{listed}).", "use smaller tiles, finish with a tile before the next one is first written, "
                        "or reuse a buffer instead of keeping tiles in a list.", site_location(iv.where))


def _next_use(iv: Interval, tick: int) -> int:
    """The first instruction after `tick` that touches `iv`; -1 if `tick` itself does (not spillable now)."""
    uses = iv.uses
    i = bisect.bisect_left(uses, tick)
    if i < len(uses) and uses[i] == tick:
        return -1
    return uses[i] if i < len(uses) else -1


def allocation_site() -> tuple[Any, int] | None:
    """The kernel line allocating a tile, as (code object, line): made per allocation, so the
    `SourceLocation` is built only if it is reported (`site_location`)."""
    frame = sys._getframe(2)
    known = _SIMULATOR_FILES
    while frame is not None:
        code = frame.f_code
        simulator = known.get(code.co_filename)
        if simulator is None:
            simulator = is_simulator_file(code.co_filename)
        if not simulator:
            return code, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def site_location(site: tuple[Any, int] | None) -> SourceLocation | None:
    if site is None:
        return None
    code, line = site
    return SourceLocation(code.co_filename, line, code.co_name)
