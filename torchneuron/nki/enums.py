"""ISA enumerations shared by both front ends (reference §2.6)."""

from __future__ import annotations

import enum


class engine(enum.IntEnum):
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


tensor_engine, scalar_engine, gpsimd_engine, vector_engine = engine.tensor, engine.scalar, engine.gpsimd, engine.vector
activation_engine = engine.scalar
unknown_engine = engine.unknown
dma_engine_ = engine.dma


class reduce_cmd(enum.IntEnum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.IntEnum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.IntEnum):
    error = 0
    skip = 1


class matmul_perf_mode(str, enum.Enum):
    none = "none"
    double_row = "double_row"  # fp8: two K rows per PE pass (NeuronCore-v3+)


class dma_engine(enum.IntEnum):
    dma = 0
    gpsimd_dma = 1


class dependency(enum.Enum):
    """`NkiInstruction.depends_on(kind=)`: a hardware semaphore wait, or an order for the compiler's
    schedulers only (the instructions may still overlap on different engines)."""
    runtime = "runtime"
    schedule = "schedule"


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


# what `nki.isa.constants` / `neuronxcc.nki.isa.constants` export
CONSTANTS = ["dge_mode", "dma_engine", "engine", "matmul_perf_mode", "nc_version", "oob_mode", "reduce_cmd"]
