"""`neuronxcc.nki.compiler`: allocation and scheduling directives. They steer the compiler's placement,
not results: on the simulator they select the buffer kind and, for block tensors, how many physical tiles
the blocks occupy (what capacity is charged, `core.memory`); addresses themselves are not modelled."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..core.ordering import no_reorder  # noqa: F401
from ..core.buffers import PSUM, SBUF, Buffer, Placement


class _SbufAllocator:
    buffer: Buffer = SBUF

    def auto_alloc(self) -> Buffer:
        return self.buffer

    def mod_alloc(self, base_addr: int = 0, *, base_partition: int = 0, num_par_tiles: tuple[int, ...] = (),
                  num_free_tiles: tuple[int, ...] = ()) -> Placement:
        """Blocks placed modulo `num_free_tiles` physical tiles along the free dim (tiles stacked along
        partitions, `num_par_tiles`, take no extra bytes per partition)."""
        return Placement(self.buffer, math.prod(num_free_tiles) if num_free_tiles else 1)

    def alloc(self, func: Callable[..., Any]) -> Placement:
        """`func(block_index, pdim_size, fdim_size_bytes) -> (start_partition, byte_offset)` per block."""
        return Placement(self.buffer, address_of=func)


class _PsumAllocator(_SbufAllocator):
    buffer = PSUM

    def mod_alloc(self, base_bank: int = 0, *, base_addr: int = 0,  # type: ignore[override]
                  num_bank_tiles: tuple[int, ...] = ()) -> Placement:
        return Placement(self.buffer, math.prod(num_bank_tiles) if num_bank_tiles else 1, base_bank=base_bank)


sbuf = _SbufAllocator()
psum = _PsumAllocator()


def _passthrough(func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    return func if func is not None else (lambda f: f)


enable_stack_allocator = force_auto_alloc = skip_middle_end_transformations = _passthrough


def multi_buffer(n: int) -> int:
    return int(n)
