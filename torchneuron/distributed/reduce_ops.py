"""c10d reduce ops on a transport that natively has only SUM, PRODUCT, MIN, MAX and the bitwise ops.

AVG is a SUM whose result is divided by the group size (truncating for integers, as NCCL does); PREMUL_SUM
multiplies each rank's input by its factor before a SUM (the factor may differ per rank, so this cannot be
moved after the transfer).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributed import ReduceOp

from .transport import NATIVE_OPS

_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)
_SUM = ReduceOp.SUM


@dataclass(frozen=True)
class ReducePlan:
    op: ReduceOp                              # what the transport runs
    premul: float | torch.Tensor | None       # multiply inputs by this before the transfer
    divisor: int | None                       # divide results by this afterwards (AVG)


_PLANS: dict[tuple, ReducePlan] = {}


def plan(reduce_op: ReduceOp, dtype: torch.dtype, world_size: int, context: str) -> ReducePlan:
    kind = reduce_op.op
    if kind != ReduceOp.PREMUL_SUM:  # the hot path: a dict hit (PREMUL_SUM's factor varies per call)
        key = (kind, dtype, world_size)
        cached = _PLANS.get(key)
        if cached is None:
            cached = _PLANS[key] = _plan(reduce_op, kind, dtype, world_size, context)
        return cached
    return _plan(reduce_op, kind, dtype, world_size, context)


def _plan(reduce_op: ReduceOp, kind, dtype: torch.dtype, world_size: int, context: str) -> ReducePlan:
    if kind == ReduceOp.AVG:
        if dtype == torch.bool:
            raise ValueError(f"{context}: ReduceOp.AVG is not defined for torch.bool tensors")
        return ReducePlan(_SUM, None, world_size)
    if kind == ReduceOp.PREMUL_SUM:
        if not (dtype.is_floating_point or dtype.is_complex):
            raise ValueError(f"{context}: ReduceOp.PREMUL_SUM needs a floating-point tensor, got {dtype}")
        return ReducePlan(_SUM, reduce_op.factor, None)
    for native in NATIVE_OPS:
        if kind == native:
            if native in _BITWISE and (dtype.is_floating_point or dtype.is_complex):
                raise ValueError(f"{context}: ReduceOp.{kind.name} needs an integer or bool tensor, got {dtype}")
            return ReducePlan(native, None, None)
    raise ValueError(f"{context}: unsupported reduce op {kind}")


def scale(buf: torch.Tensor, factor: float | torch.Tensor, host) -> None:
    """buf *= factor, in place; a tensor factor is read where ``buf`` lives (``host`` maps it there)."""
    if isinstance(factor, torch.Tensor):
        factor = host(factor) if factor.device != buf.device else factor
        buf.mul_(factor.reshape(()))
    else:
        buf.mul_(factor)
