"""LU with partial pivoting as LAPACK ``getrf``, and unpacking the packed result into P, L and U."""

from __future__ import annotations

import torch

from ._common import _eye, _first_true_1based


def _lu(a, pivot: bool = True):
    """LU with partial pivoting, as LAPACK ``getrf``: returns (LU packed, 1-based int32 pivots, int32 info).
    Works on rectangular (..., m, n) matrices; the pivot is the first row of maximal ``|a|`` in the column."""
    m, n = a.shape[-2], a.shape[-1]
    k_max = min(m, n)
    if a.numel() == 0:  # nothing to factor (and torch-mlir crashes on empty gathers)
        batch = a.shape[:-2]
        return (a.clone(), torch.ones(batch + (k_max,), dtype=torch.int32, device=a.device),
                torch.zeros(batch, dtype=torch.int32, device=a.device))
    rows = torch.arange(m, device=a.device)
    pivots, diag = [], []
    for k in range(k_max):
        if pivot:
            p = a[..., k:, k].abs().argmax(-1) + k  # first maximum, like idamax
            row_k = a[..., k:k + 1, :]
            row_p = torch.gather(a, -2, p[..., None, None].expand(*a.shape[:-2], 1, n))
            is_p = (rows == p.unsqueeze(-1)).unsqueeze(-1)
            a = torch.where(is_p, row_k, torch.where((rows == k).unsqueeze(-1), row_p, a))
            pivots.append(p)
        piv = a[..., k, k]
        diag.append(piv)
        below = a[..., k + 1:, k]
        # a zero pivot leaves the (all-zero) column unscaled, as getrf does
        safe = torch.where(piv == 0, torch.ones_like(piv), piv)
        mult = torch.where((piv == 0).unsqueeze(-1), below, below / safe.unsqueeze(-1))
        trailing = a[..., k + 1:, k + 1:] - mult.unsqueeze(-1) * a[..., k:k + 1, k + 1:]
        lower = torch.cat([a[..., k + 1:, :k], mult.unsqueeze(-1), trailing], -1)
        a = torch.cat([a[..., :k + 1, :], lower], -2)
    batch = a.shape[:-2]
    if pivot and k_max:
        piv_t = (torch.stack(pivots, -1) + 1).to(torch.int32)
    else:
        piv_t = (torch.arange(k_max, device=a.device, dtype=torch.int32) + 1).expand(*batch, k_max)
        piv_t = piv_t.clone()
    if k_max:
        info = _first_true_1based(torch.stack(diag, -1) == 0)
    else:
        info = torch.zeros(batch, dtype=torch.int32, device=a.device)
    return a, piv_t, info


def _perm_from_pivots(pivots, m: int):
    """Row permutation ``perm`` with ``(P^T A)[i] = A[perm[i]]`` from LAPACK's sequential row swaps."""
    batch = pivots.shape[:-1]
    idx = torch.arange(m, device=pivots.device)
    perm = idx.expand(*batch, m)
    if pivots.numel() == 0:
        return perm
    for k in range(pivots.shape[-1]):
        p = (pivots[..., k] - 1).long().unsqueeze(-1)
        vk = perm[..., k:k + 1]
        vp = torch.gather(perm, -1, p)
        perm = torch.where(idx == p, vk, torch.where(idx == k, vp, perm))
    return perm


def _perm_matrix(pivots, m: int, dtype):
    """P of ``A = P L U``: ``P[perm[i], i] = 1``."""
    perm = _perm_from_pivots(pivots, m)
    rows = torch.arange(m, device=pivots.device)
    return (perm.unsqueeze(-2) == rows.unsqueeze(-1)).to(dtype)


def _unpack_lu(lu):
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    L = torch.tril(lu[..., :, :k], -1) + _eye(m, lu, k)
    U = torch.triu(lu[..., :k, :])
    return L, U


def _linalg_lu_factor_ex(A, *, pivot=True, check_errors=False):
    return _lu(A, pivot)


def _linalg_lu(A, *, pivot=True):
    lu, piv, _ = _lu(A, pivot)
    L, U = _unpack_lu(lu)
    P = _perm_matrix(piv, A.shape[-2], A.dtype) if pivot else A.new_zeros([0])
    return P, L, U


def _lu_unpack(LU, pivots, unpack_data=True, unpack_pivots=True):
    m = LU.shape[-2]
    if unpack_data:
        L, U = _unpack_lu(LU)
    else:
        L, U = LU.new_zeros([0]), LU.new_zeros([0])
    P = _perm_matrix(pivots, m, LU.dtype) if unpack_pivots else LU.new_zeros([0])
    return P, L, U
