"""``_trilinear``, the op behind ``F.bilinear``."""

from __future__ import annotations

import math

import torch

from ..decomp_common import zeros

aten = torch.ops.aten


def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """``_trilinear`` (behind ``F.bilinear``) as one einsum: each input is unsqueezed at its ``expand``
    dims, the three are multiplied and ``sumdim`` summed out; einsum contracts pairwise through bmm."""
    nd = i1.dim() + len(expand1)
    letters = "abcdefghijklmnopqrstuvwxyz"[:nd]
    specs, size = [], [1] * nd
    for t, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        dims = [d for d in range(nd) if d not in expand]
        specs.append("".join(letters[d] for d in dims))
        for axis, d in enumerate(dims):
            if size[d] == 1:  # broadcasting: a size-1 dim takes the other operands' size (which may be 0)
                size[d] = t.shape[axis]
    present = set("".join(specs))
    kept = [d for d in range(nd) if d not in sumdim]
    out_shape = [size[d] for d in kept]
    if math.prod(out_shape) == 0 or any(t.numel() == 0 for t in (i1, i2, i3)):
        # zero-size operands: a sum over an empty range is 0 (torch-mlir mis-types zero-size contractions)
        return zeros(out_shape, i1.dtype, i1.device)
    out = aten.einsum.default(
        f"{specs[0]},{specs[1]},{specs[2]}->" + "".join(letters[d] for d in kept if letters[d] in present),
        [i1, i2, i3])
    # a kept dim every input expands has size 1
    return aten.reshape.default(out, out_shape)
