"""nonzero_static with a static output size."""

from __future__ import annotations

import torch

from ..decomp_common import arange


def _nonzero_static(self, *, size, fill_value=-1):
    """nonzero_static: each nonzero element's rank among the nonzeros (an exclusive cumsum) is its output row;
    a scatter writes the flat index there (the others go to a dropped dummy row, so every kept row has
    one writer), then the flat indices become coordinates; rows past the count hold ``fill_value``."""
    nd = self.dim()
    n = self.numel()
    if size == 0 or nd == 0 or n == 0:
        if nd == 0 and size > 0:  # a scalar has no coordinates: (size, 0)
            return torch.zeros((size, 0), dtype=torch.int64, device=self.device)
        return torch.full((size, nd), fill_value, dtype=torch.int64, device=self.device)
    flat = self.reshape(-1)
    nz = flat if flat.dtype == torch.bool else flat != 0
    nz64 = nz.to(torch.int64)
    rank = torch.cumsum(nz64, 0) - 1
    target = torch.where(nz & (rank < size), rank, torch.full_like(rank, size))
    slots = torch.zeros(size + 1, dtype=torch.int64, device=self.device).scatter(
        0, target, arange(n, self.device))[:size]
    coords = []
    rest = slots
    stride = n
    for d in range(nd):  # peel coordinates off with floor divisions (integer fmod has no lowering)
        stride //= self.shape[d]
        c = torch.div(rest, stride, rounding_mode="floor")
        rest = rest - c * stride
        coords.append(c)
    out = torch.stack(coords, 1)
    valid = (arange(size, self.device) < nz64.sum()).reshape(size, 1)
    return torch.where(valid, out, torch.full_like(out, fill_value))
