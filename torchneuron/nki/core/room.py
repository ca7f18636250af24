"""The cost model's schedule under SBUF and PSUM capacity: a tile's first write waits until the tiles freed
before it have given back enough room.

The cost model lets independent work run ahead (the next iteration's load starts while this one computes, as
the compiler's multi-buffering allows), but only as far as SBUF (PSUM) holds both iterations' tiles: a loop
whose one iteration fills SBUF runs its load, compute and store one after another. Whether a tile is dead is
known only when the kernel has run (`OnChipMemory.finish`), so an instance's instructions are recorded as
they are issued (`KernelRun.issue*`) and handed to the cost model afterwards, each with the earliest time its
new tiles fit.
"""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ..enums import dependency
from ..errors import ERR_INVALID_ARG, fail

if TYPE_CHECKING:
    from ..cost import CostModel
    from .memory import OnChipMemory

COMPUTE, DMA, MOVE = 0, 1, 2


class FreedRoom:
    """Tiles already dead in program order, by the time their last reader ends: what is still held at T."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.entries: list[tuple[float, int]] = []  # (free time, bytes per partition), sorted by time
        self.total = 0

    def add(self, free_at: float, nbytes: int) -> None:
        bisect.insort(self.entries, (free_at, nbytes))
        self.total += nbytes
        entries = self.entries
        # a wait looks no further back than `capacity` bytes from the newest: older entries cannot matter
        while len(entries) > 1 and self.total - entries[0][1] > self.capacity:
            self.total -= entries.pop(0)[1]

    def earliest(self, slack: int) -> float:
        """The earliest time at which the tiles still held need no more than `slack` bytes per partition."""
        total = self.total
        if total <= slack or not self.entries:
            return 0.0
        entries = self.entries
        if slack < 0:  # more is live in program order than fits (the spill model charges that): wait for all
            return entries[-1][0]
        if total - slack < slack:  # few bytes to wait for: count up from the oldest
            held = 0
            for free_at, nbytes in entries:
                held += nbytes
                if held >= total - slack:
                    return free_at
            return entries[-1][0]
        kept = 0
        for free_at, nbytes in reversed(entries):
            kept += nbytes
            if kept > slack:
                return free_at
        return 0.0


def replay(cost: CostModel, log: list[tuple[Any, ...]], memory: OnChipMemory, edges: list | None = None) -> None:
    """Schedules an instance's recorded instructions, each no earlier than SBUF and PSUM have room for the
    tiles it starts and than the kernel's own ordering edges allow (`edges`, from `NkiInstruction.depends_on`:
    a runtime edge waits for the producer's end, a schedule edge for its start)."""
    kinds = ("sbuf", "psum")
    firsts = {k: defaultdict(int) for k in kinds}  # tick -> bytes per partition its new tiles need
    held_out = {k: defaultdict(int) for k in kinds}  # tick -> bytes whose room its own results may take
    lasts = {k: defaultdict(int) for k in kinds}  # tick -> bytes freed when it ends
    for iv in memory.intervals:
        # a PSUM tensor the kernel placed on named banks (psum.alloc / mod_alloc) shares them with the tensors
        # placed there too, in the order the kernel uses them: it takes no room of the compiler's to wait for
        if iv.first < 0 or iv.banks is not None:
            continue
        k = iv.kind
        firsts[k][iv.first] += iv.nbytes
        if memory.room_taken_by_last_reader(iv):
            held_out[k][iv.last] += iv.nbytes
        else:
            lasts[k][iv.last] += iv.nbytes
    freed = {k: FreedRoom(memory.capacity(k)) for k in kinds}
    live = dict.fromkeys(kinds, 0)
    waits, order = _edges(log, edges) if edges else ({}, range(len(log)))
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    for i in order:
        entry = log[i]
        kind, tick = entry[0], entry[1]
        after = 0.0
        for producer, runtime in waits.get(i, ()):
            t = ends[producer] if runtime else starts[producer]
            if t > after:
                after = t
        for k in kinds:
            live[k] -= held_out[k].get(tick, 0)
            need = firsts[k].get(tick, 0)
            if need:
                after = max(after, freed[k].earliest(freed[k].capacity - live[k] - need))
                live[k] += need
        if kind == COMPUTE:
            end = cost.compute(entry[2], entry[3], entry[4], entry[5], entry[6], entry[7], after, entry[8],
                               entry[9], entry[10])
        elif kind == DMA:
            end = cost.dma(entry[2], entry[3], entry[4], entry[5], after, entry[6])
        else:
            end = cost.sync(entry[2], entry[3], after)
        if edges:
            starts[i], ends[i] = cost.last_start, end
        for k in kinds:
            gone = lasts[k].get(tick, 0)
            if gone:
                live[k] -= gone
                freed[k].add(end, gone)


def _edges(log: list[tuple[Any, ...]], edges: list) -> tuple[dict[int, list[tuple[int, bool]]], list[int]]:
    """Each consumer entry's waits [(producer entry, runtime?)], and an order of the entries that puts every
    producer before its consumers and otherwise keeps program order (an edge may point to a later instruction)."""
    waits: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    before: dict[int, set[int]] = defaultdict(set)
    for c0, c1, p0, p1, kind in edges:
        if c0 == c1 or p0 == p1:  # a call that issued nothing (or a launch that keeps no cost model)
            continue
        runtime = kind is dependency.runtime
        # runtime: every entry waits for the producer's last to end; schedule: for its first to start
        producer = p1 - 1 if runtime else p0
        for c in range(c0, c1):
            if c != producer:
                waits[c].append((producer, runtime))
                before[c].add(producer)
    if all(p < c for c, ps in before.items() for p in ps):
        return waits, range(len(log))
    indegree = [0] * len(log)
    after: dict[int, list[int]] = defaultdict(list)
    for c, ps in before.items():
        for p in ps:
            indegree[c] += 1
            after[p].append(c)
    ready = [i for i in range(len(log)) if indegree[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in after.get(i, ()):
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, c)
    if len(order) < len(log):
        raise fail(ERR_INVALID_ARG, "the kernel's instruction dependencies form a cycle (depends_on / "
                   "with_schedule).", "remove one of the edges that make instructions wait for each other.")
    return waits, order
