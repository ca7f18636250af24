"""Small tensor helpers shared by the linear-algebra decompositions: each avoids an op or a slice
shape that torch-mlir cannot lower."""

from __future__ import annotations

import torch


def _mT(x):
    return x.transpose(-2, -1)


def _eye(n: int, like: torch.Tensor, cols: int | None = None):
    """n x cols identity built from an iota comparison (no slicing: empty slices trip torch-mlir)."""
    cols = n if cols is None else cols
    r = torch.arange(n, device=like.device).unsqueeze(-1)
    c = torch.arange(cols, device=like.device)
    return (r == c).to(like.dtype)


def _set_col(x, j: int, col):
    """``x`` with column ``j`` replaced by ``col`` (shape ``x.shape[:-1]``): functional column update."""
    idx = torch.arange(x.shape[-1], device=x.device)
    return torch.where(idx == j, col.unsqueeze(-1), x)


def _diag(x):
    """Main diagonal of the trailing square-ish matrices (``aten.diagonal`` does not lower)."""
    k = min(x.shape[-2], x.shape[-1])
    if k == 0:
        return x.new_zeros(x.shape[:-2] + (0,))
    return torch.stack([x[..., i, i] for i in range(k)], -1)


def _index(values: list[int], device):
    """A constant int64 index tensor built from ops (``torch.tensor`` constants trace to a ``detach_`` the
    strict path cannot lower)."""
    return torch.stack([torch.full((), v, dtype=torch.long, device=device) for v in values])


def _first_true_1based(flags):
    """1-based index of the first True along the last dim, 0 if none (LAPACK's ``info``), as int32."""
    k = flags.shape[-1]
    if k == 0:
        return torch.zeros(flags.shape[:-1], dtype=torch.int32, device=flags.device)
    pos = torch.arange(1, k + 1, dtype=torch.int32, device=flags.device)
    first = torch.where(flags, pos, torch.full_like(pos, k + 1)).amin(-1)
    return torch.where(first == k + 1, torch.zeros_like(first), first)
