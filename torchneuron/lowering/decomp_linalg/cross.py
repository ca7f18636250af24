"""Cross product of 3-vectors."""

from __future__ import annotations

import torch


def _linalg_cross(a, b, dim=-1):
    """Cross product of 3-vectors along ``dim`` from index_select'ed components (batch dims broadcast)."""
    shape = torch.broadcast_shapes(a.shape, b.shape)
    a, b = a.expand(shape), b.expand(shape)
    dim = dim % len(shape)

    def comp(x, i):
        return x.narrow(dim, i, 1)

    c0 = comp(a, 1) * comp(b, 2) - comp(a, 2) * comp(b, 1)
    c1 = comp(a, 2) * comp(b, 0) - comp(a, 0) * comp(b, 2)
    c2 = comp(a, 0) * comp(b, 1) - comp(a, 1) * comp(b, 0)
    return torch.cat([c0, c1, c2], dim)
