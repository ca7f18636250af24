"""The state of one kernel launch: target, grid position, on-chip memory, and the one place every
instruction is issued through (`KernelRun.issue`, `issue_dma`, `issue_move`), which makes its operands
live and hands it to the cost model.

NKI calls are only legal inside a kernel; they find the launch through `current()`, which raises the
documented `err_nki_api_outside_of_nki_kernel` when there is none.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cost import TINY_ELEMENTS
from ..errors import ERR_OUTSIDE_KERNEL, fail
from ..hardware import Target
from . import hoist, room
from .memory import OnChipMemory, Whole
from .scoped import scoped
from .tensor import NkiTensor

if TYPE_CHECKING:
    from ..cost import CostModel


@dataclass
class KernelRun:
    """One kernel instance (one program of the SPMD grid) being simulated."""

    target: Target
    cost: CostModel | None  # None when not `accounting`
    grid: tuple[int, ...] = ()
    program_ids: tuple[int, ...] = ()
    api: str = "legacy"  # which front end launched it: "legacy" | "current"
    memory: OnChipMemory = field(init=False)
    prints: list[tuple[str, object]] = field(default_factory=list)
    # shared_hbm allocations are one tensor for the whole grid: the n-th one each instance makes is the same
    shared: list = field(default_factory=list)
    shared_next: int = 0
    rng: Any = None           # the PRNG state (instructions.rng), created on first use
    reduce_regs: Any = None   # the Scalar engine's per-partition reduce registers (instructions.elementwise)
    vector_regs: Any = None   # the Vector engine's accumulators (instructions.accumulate.tensor_scalar_cumulative)
    exchange: Any = None      # lnc.CoreExchange when the cores of an LNC launch run concurrently
    kernel_code: Any = None   # the launched function's code: shared_hbm tensors are allocated there only
    tensor_class: type = NkiTensor  # what allocations return (the launch passes instructions.tile.Tile)
    # torch launches (nki.torch_io): (shape, dtype) -> flat writable memory for a shared_hbm output (a device
    # tensor's, so the caller gets the result without a copy), or None for the simulator's own memory
    hbm_data: Any = None
    # False for a repeat of a launch signature that already ran fully checked (nki.launch_signatures): the
    # values are computed as always, the cost model and the on-chip live ranges are not kept
    accounting: bool = True
    # the instructions issued, for the cost model once the live ranges are known (core.room.replay)
    log: list = field(default_factory=list)
    # the NKI loops being iterated, innermost last ([loop instance, iteration]), and the instructions each saw
    # in its current and previous iteration: what `core.hoist` needs (with each storage's `last_write`)
    loops: list = field(default_factory=list)
    invariants: dict = field(default_factory=dict)
    # depth of `no_reorder` blocks around the instructions being issued: those keep program order on their engine
    in_order: int = 0
    # ordering edges between log entries (`NkiInstruction.depends_on`, `kernel.with_schedule`): (consumer first,
    # consumer end, producer first, producer end, dependency kind), for `core.room.replay`
    edges: list = field(default_factory=list)
    named: dict = field(default_factory=dict)  # instruction `name=` -> its handles, in program order
    # the dynamic loops being iterated, outermost first: ((code, line) of the loop statement, instance token)
    dynamic_loops: list = field(default_factory=list)

    def __post_init__(self) -> None:
        # a repeat keeps no live ranges (every use of `memory` is behind `accounting`)
        self.memory = OnChipMemory(self.target, compiler_allocates=self.api == "legacy") \
            if self.accounting else None  # type: ignore[assignment]

    def _operands(self, tensors: Iterable[Any], tick: int, written: bool = False) -> list[Any]:
        """Makes the tensors' storages live at `tick` (`written`: and written then); what the cost model
        keeps of them (the recorded instructions must not hold a kernel's tiles alive until it ends): the
        storage's uid, or (uid, block) per block reached of a block tensor, whose blocks are loaded and
        computed on independently (an instruction on block 0 does not wait for the load into block 1)."""
        out: list[Any] = []
        for t in tensors:
            if isinstance(t, NkiTensor):
                st = t.storage
                if written:
                    st.last_write = tick
                live = st.live
                if live is not None:
                    if type(live) is Whole:  # Whole.touch, inline: every operand of every instruction
                        iv = live.interval
                        if iv.first < 0:
                            iv.first = tick
                        if iv.last != tick:
                            iv.uses.append(tick)
                        iv.last = tick
                    else:
                        uid = st.uid
                        out.extend((uid, int(b)) for b in live.touch(tick, t))
                        continue
                out.append(st.uid)
        return out

    def issue(self, engine: str, cycles: float, reads: Iterable[Any] = (), writes: Iterable[Any] = (),
              latency_cycles: float = 0.0, flops: float = 0.0, pure: tuple | None = None) -> None:
        """A compute instruction on `engine` reading and writing these tensors (non-tensors are skipped).
        `pure`: what else defines its result (its ops), given only by instructions whose result is a function
        of that and their operands; such an instruction repeating the previous iteration of its loop is free
        (`core.hoist`)."""
        if not self.accounting:
            return
        if pure is not None and self.loops and hoist.repeated(self, engine, cycles, pure, reads, writes):
            self.issue_move(reads, writes)
            return
        psum = tiny = False
        if engine in ("vector", "scalar"):
            psum, tiny = _psum_and_tiny(reads, writes)
        tick = self.memory.tick = self.memory.tick + 1
        self.log.append((room.COMPUTE, tick, engine, cycles, self._operands(reads, tick),
                         self._operands(writes, tick, True), latency_cycles, flops, psum, tiny, self.in_order > 0))

    def issue_dma(self, nbytes: float, descriptors: int, src: NkiTensor, dst: NkiTensor,
                  moved: float | None = None) -> None:
        """A DMA of `nbytes` cut into `descriptors` runs (`moved`: queue bytes, if whole bursts exceed them)."""
        if not self.accounting:
            return
        tick = self.memory.tick = self.memory.tick + 1
        self.log.append((room.DMA, tick, nbytes, descriptors, self._operands((src,), tick),
                         self._operands((dst,), tick, True), moved))

    def issue_move(self, reads: Iterable[Any], writes: Iterable[Any]) -> None:
        """A value landing in a tile at no cost (an assignment the compiler folds into the producer)."""
        if not self.accounting:
            return
        tick = self.memory.tick = self.memory.tick + 1
        self.log.append((room.MOVE, tick, self._operands(reads, tick), self._operands(writes, tick, True)))

    def zero_filled(self, storage: Any) -> None:
        """Legacy `nl.zeros(..., buffer=nl.psum)` just issued its memset (the last entry of the log)."""
        if self.accounting and self.api == "legacy" and self.log and self.log[-1][0] == room.COMPUTE:
            storage.zero_fill = (len(self.log) - 1, self.memory.tick)

    def fold_zero_fill(self, storage: Any, whole: bool) -> None:
        """`psum += matmul` onto a zero-filled PSUM tile (`whole`: all of it, by a matmul that just ran): when
        nothing touched the tile since the fill, the compiler starts the accumulation group there instead (its
        first matmul overwrites; on NeuronCore-v3 a matmul accumulating onto PSUM that another instruction
        initialised is undefined, AWS's nc_matmul documents), so the memset costs nothing."""
        index, tick = storage.zero_fill
        storage.zero_fill = None
        live = storage.live
        log = self.log
        if whole and type(live) is Whole and live.interval.last == tick and index < len(log) and log[index][1] == tick:
            log[index] = (room.MOVE, tick, [], log[index][5])

    def schedule(self) -> None:
        """Hands the recorded instructions to the cost model (after `memory.finish()`)."""
        room.replay(self.cost, self.log, self.memory, self.edges)
        self.log = []
        self.edges = []


def _psum_and_tiny(reads: Iterable[Any], writes: Iterable[Any]) -> tuple[bool, bool]:
    """For a Vector/Scalar instruction: whether it touches PSUM (the two engines take turns there on
    NeuronCore-v2) and whether every operand has fewer than `cost.TINY_ELEMENTS` per partition."""
    psum, widest = False, 0
    for t in itertools.chain(reads, writes):
        if isinstance(t, NkiTensor):
            if t.buffer.name == "psum":
                psum = True
            n = t.free_size
            if n > widest:
                widest = n
    return psum, widest < TINY_ELEMENTS


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


def running(run: KernelRun) -> scoped:
    """`with running(run):` makes `run` the current launch on this thread."""
    return scoped(_state, "run", run)
