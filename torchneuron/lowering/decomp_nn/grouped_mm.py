"""``torch._grouped_mm`` (mixture-of-experts layers) for static shapes: the groups an offsets tensor marks become
one-hot masks over all groups, so one dense product per layout computes every row's (or column's) own group.

The cost: every row meets every group's weights, G times the FLOPs of the grouped product (XLA fuses the mask
into the reduction); without a kernel, a static-shape program cannot pick weights per row any cheaper. The
simulator's default executor runs PyTorch's own ``_grouped_mm``; this is what the StableHLO (the Trn host's
program, and the simulator's cross-check) computes.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _group_of(n: int, offs: torch.Tensor) -> torch.Tensor:
    """Group index of each of ``n`` positions: how many group ends (``offs``, cumulative) lie at or before it;
    ``len(offs)`` past the last group (PyTorch's kernel leaves such rows unwritten; here they are 0)."""
    pos = aten.arange.default(n, dtype=offs.dtype, device=offs.device)
    return aten.sum.dim_IntList(aten.le.Tensor(aten.unsqueeze.default(offs, 0), aten.unsqueeze.default(pos, 1)),
                                [1])


def _one_hot(groups: torch.Tensor, count: int) -> torch.Tensor:
    ids = aten.arange.default(count, dtype=groups.dtype, device=groups.device)
    return aten.eq.Tensor(aten.unsqueeze.default(groups, 1), aten.unsqueeze.default(ids, 0)).to(torch.float32)


def _grouped_mm(a, b, offs=None, bias=None, out_dtype=None):
    out_dtype = out_dtype or a.dtype
    af, bf = a.to(torch.float32), b.to(torch.float32)
    if a.dim() == 3 and b.dim() == 3:  # a batch of equal groups, no offsets
        out = torch.bmm(af, bf)
    elif a.dim() == 2 and b.dim() == 3:  # rows of a in groups: out[t] = a[t] @ b[g(t)]
        onehot = _one_hot(_group_of(a.shape[0], offs), b.shape[0])  # [T, G]
        out = torch.einsum("tk,gkn,tg->tn", af, bf, onehot)
    elif a.dim() == 3 and b.dim() == 2:  # columns of b in groups: out[:, n] = a[g(n)] @ b[:, n]
        onehot = _one_hot(_group_of(b.shape[1], offs), a.shape[0])  # [N, G]
        out = torch.einsum("gmk,kn,ng->mn", af, bf, onehot)
    else:  # 2-D x 2-D, the contraction dim in groups: out[g] = a[:, K_g] @ b[K_g, :]
        mask = _one_hot(_group_of(a.shape[1], offs), offs.shape[0])  # [K, G]
        out = torch.einsum("mk,kg,kn->gmn", af, mask, bf)
    if bias is not None:
        out = out + bias.to(torch.float32)
    return out.to(out_dtype)
