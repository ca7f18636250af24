"""`neuronxcc.nki.isa.constants`: the ISA enumerations, importable on their own
(`from neuronxcc.nki.isa.constants import oob_mode`, as AWS's kernels do)."""

from ...enums import (  # noqa: F401
    CONSTANTS,
    dge_mode,
    dma_engine,
    engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
)

__all__ = list(CONSTANTS)
