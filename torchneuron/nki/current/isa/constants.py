"""`nki.isa.constants`: the ISA enumerations, importable on their own (`from nki.isa.constants import
oob_mode`, as AWS's kernels do)."""

from ...enums import CONSTANTS
from ...enums import dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, oob_mode, reduce_cmd  # noqa: F401

__all__ = list(CONSTANTS)
