"""`iota` and the affine index patterns it writes (affine selects compare against the same values)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core.indexing import IndexArray
from ..core.tensor import NkiTensor
from ..errors import ERR_SHAPE, fail
from .common import charge, check_on_chip, check_partitions, output_mask


def pattern_values(shape: tuple[int, ...], pattern: Any, offset: int, channel_multiplier: int) -> np.ndarray:
    """offset + c*channel_multiplier + sum(step*idx) over the free pattern [[step, num], ...] (int32 math)."""
    pairs = [(int(s), int(n)) for s, n in pattern]
    p = shape[0]
    vals = np.full((p,) + tuple(n for _, n in pairs), offset, dtype=np.int64)
    vals += (np.arange(p, dtype=np.int64) * channel_multiplier).reshape((p,) + (1,) * len(pairs))
    for k, (step, n) in enumerate(pairs):
        sh = [1] * (len(pairs) + 1)
        sh[k + 1] = n
        vals += (np.arange(n, dtype=np.int64) * step).reshape(sh)
    if vals.size != int(np.prod(shape)):
        raise fail(ERR_SHAPE, f"pattern {pairs} gives {vals.size // max(p, 1)} elements per partition, the "
                   f"destination has {int(np.prod(shape[1:]))}.", "make the pattern counts match the tile.")
    return vals.reshape(shape).astype(np.int32)


def iota(dst: NkiTensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0, api: str = "iota",
         mask: np.ndarray | None = None) -> None:
    check_on_chip(dst, api, "dst")
    check_partitions(dst, api, "dst")
    if isinstance(pattern, (IndexArray, int, np.integer)):
        vals = np.broadcast_to(np.asarray(pattern.values if isinstance(pattern, IndexArray) else pattern), dst.shape)
    else:
        vals = pattern_values(dst.shape, pattern, int(offset), int(channel_multiplier))
    dst.write(dtypes.cast(vals.astype(np.int64) if dtypes.is_int(dst.dtype) else vals.astype(np.float32), dst.dtype),
              output_mask(api, mask, dst.shape))
    charge("gpsimd", dst, [])
