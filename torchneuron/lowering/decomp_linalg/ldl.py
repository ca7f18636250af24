"""Bunch-Kaufman LDL^T as LAPACK ``dsytf2``, and its solve (``dsytrs``)."""

from __future__ import annotations

import math

import torch

from ._common import _first_true_1based, _mT


_BK_ALPHA = (1 + math.sqrt(17.0)) / 8  # Bunch-Kaufman's growth-bounding constant


def _sym_swap(T, a: int, b):
    """Symmetric interchange of rows/columns ``a`` (static) and ``b`` (per-batch index tensor) of T."""
    r = T.shape[-1]
    idx = torch.arange(r, device=T.device)
    b_ = b.unsqueeze(-1)
    perm = torch.where(idx == a, b_, torch.where(idx == b_, torch.full_like(idx, a), idx))  # (..., r)
    T = torch.gather(T, -2, perm.unsqueeze(-1).expand(T.shape))
    return torch.gather(T, -1, perm.unsqueeze(-2).expand(T.shape))


def _sym_lower(T):
    return torch.tril(T) + _mT(torch.tril(T, -1))


def _ldl_step(T, kk: int, kp):
    """Interchange kk <-> kp, then one 1x1 (kk = 0) or 2x2 (kk = 1) elimination step of ``dsytf2`` on the
    symmetric trailing matrix T; returns T with the L column(s) and D block in place, trailing block
    updated (as LAPACK: only the lower triangle is computed, then mirrored)."""
    T = _sym_swap(T, kk, kp)
    if kk == 0:
        d11 = 1 / T[..., 0, 0]
        x = T[..., 1:, 0]
        w = -d11.unsqueeze(-1) * x  # dsyr: A(i,j) += x(i) * (alpha x(j)), alpha = -d11
        rest = _sym_lower(T[..., 1:, 1:] + x.unsqueeze(-1) * w.unsqueeze(-2))
        col = torch.cat([T[..., :1, 0], x * d11.unsqueeze(-1)], -1)
        lower = torch.cat([col[..., 1:].unsqueeze(-1), rest], -1)
        return torch.cat([torch.cat([col[..., :1].unsqueeze(-1), T[..., :1, 1:]], -1), lower], -2)
    d21 = T[..., 1, 0]
    d11 = T[..., 1, 1] / d21
    d22 = T[..., 0, 0] / d21
    t = 1 / (d11 * d22 - 1)
    d21 = (t / d21).unsqueeze(-1)
    ak, ak1 = T[..., 2:, 0], T[..., 2:, 1]
    wk = d21 * (d11.unsqueeze(-1) * ak - ak1)
    wk1 = d21 * (d22.unsqueeze(-1) * ak1 - ak)
    rest = _sym_lower(T[..., 2:, 2:] - ak.unsqueeze(-1) * wk.unsqueeze(-2) - ak1.unsqueeze(-1) * wk1.unsqueeze(-2))
    lower = torch.cat([wk.unsqueeze(-1), wk1.unsqueeze(-1), rest], -1)
    return torch.cat([T[..., :2, :], lower], -2)


def _ldl_factor(A):
    """Bunch-Kaufman LDL^T of the lower triangle of A as LAPACK ``dsytf2``: (LD, 1-based int32 pivots with
    2x2 blocks as negative pairs, info). The step width (1 or 2 columns) is data-dependent, so every column
    position is visited with a per-batch ``skip`` flag (second column of a 2x2 block) and both step kinds
    are computed and selected with ``where``."""
    n = A.shape[-1]
    batch = A.shape[:-2]
    M = _sym_lower(A)
    skip = torch.zeros(batch, dtype=torch.bool, device=A.device)
    prev_kp = torch.zeros(batch, dtype=torch.long, device=A.device)
    pivots, bad = [], []
    for k in range(n):
        T = M[..., k:, k:]
        r = n - k
        absakk = T[..., 0, 0].abs()
        if r > 1:
            col = T[..., 1:, 0].abs()
            imax = col.argmax(-1) + 1  # local index of the largest subdiagonal entry
            colmax = col.amax(-1)
        else:
            imax = torch.zeros_like(prev_kp)
            colmax = torch.zeros_like(absakk)
        zero = (torch.maximum(absakk, colmax) == 0) | torch.isnan(absakk)
        active = ~skip
        bad.append(active & zero)
        if r > 1:
            row = torch.gather(T, -2, imax[..., None, None].expand(*batch, 1, r)).squeeze(-2).abs()
            idx = torch.arange(r, device=A.device)
            rowmax = torch.where(idx == imax.unsqueeze(-1), torch.zeros_like(row), row).amax(-1)
            a_imax = torch.gather(row, -1, imax.unsqueeze(-1)).squeeze(-1)
            no_swap = (absakk >= _BK_ALPHA * colmax) | (absakk >= _BK_ALPHA * colmax * (colmax / rowmax))
            one_swap = ~no_swap & (a_imax >= _BK_ALPHA * rowmax)
            two = ~no_swap & ~one_swap & ~zero & active
            one = active & ~zero & ~two
            kp_local = torch.where(no_swap, torch.zeros_like(imax), imax)
            T1 = _ldl_step(T, 0, kp_local)
            if r > 2:
                T2 = _ldl_step(T, 1, imax)
            else:  # a 2x2 block that is the whole trailing matrix: interchange only, nothing below
                T2 = _sym_swap(T, 1, imax)
            T = torch.where(one[..., None, None], T1, torch.where(two[..., None, None], T2, T))
            M = torch.cat([M[..., :, :k], torch.cat([M[..., :k, k:], T], -2)], -1)
            kp = kp_local + k
        else:
            two = torch.zeros_like(skip)
            kp = torch.zeros_like(prev_kp) + k
        piv = torch.where(skip, -(prev_kp + 1), torch.where(two, -(kp + 1), kp + 1))
        pivots.append(piv)
        prev_kp = kp
        skip = two
    if n == 0:
        return M.clone(), torch.zeros(batch + (0,), dtype=torch.int32, device=A.device), \
            torch.zeros(batch, dtype=torch.int32, device=A.device)
    return torch.tril(M), torch.stack(pivots, -1).to(torch.int32), _first_true_1based(torch.stack(bad, -1))


def _linalg_ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    if A.numel() == 0:
        n = A.shape[-1]
        return A.clone(), torch.zeros(A.shape[:-2] + (n,), dtype=torch.int32, device=A.device), \
            torch.zeros(A.shape[:-2], dtype=torch.int32, device=A.device)
    return _ldl_factor(A)


def _swap_rows(B, k: int, kp):
    """B with rows ``k`` (static) and ``kp`` (per-batch index tensor) interchanged."""
    rows = torch.arange(B.shape[-2], device=B.device)
    kp_ = kp[..., None, None]
    row_k = B[..., k:k + 1, :]
    row_p = torch.gather(B, -2, kp_.expand(*B.shape[:-2], 1, B.shape[-1]))
    is_p = rows.unsqueeze(-1) == kp_
    return torch.where(is_p, row_k, torch.where((rows == k).unsqueeze(-1), row_p, B))


def _set_rows(B, start: int, new):
    return torch.cat([B[..., :start, :], new, B[..., start + new.shape[-2]:, :]], -2)


def _linalg_ldl_solve(LD, pivots, B, *, hermitian=False):
    """Solve A X = B from ``ldl_factor``'s output as LAPACK ``dsytrs``: forward through P, L and the 1x1 /
    2x2 blocks of D, then back through L^T and P. The block structure is read from the pivot signs, so each
    position computes both kinds of step and selects per batch."""
    n = LD.shape[-1]
    batch = torch.broadcast_shapes(LD.shape[:-2], B.shape[:-2])
    LD = LD.expand(*batch, n, n)
    B = B.expand(*batch, *B.shape[-2:])
    if B.numel() == 0 or n == 0:
        return B.clone()
    pivots = pivots.expand(*batch, n).long()
    neg = pivots < 0
    second = [torch.zeros(batch, dtype=torch.bool, device=B.device)]
    for k in range(n - 1):
        second.append(~second[k] & neg[..., k])
    first = [~second[k] & neg[..., k] for k in range(n)]
    single = [~second[k] & ~neg[..., k] for k in range(n)]
    # interchange targets of either reading of a pivot, kept in range for the reading not selected
    kp1 = torch.where(neg, torch.zeros_like(pivots), pivots - 1)
    kp2 = torch.where(neg, -pivots - 1, torch.zeros_like(pivots))

    def sel(mask, a, b):
        return torch.where(mask[..., None, None], a, b)

    for k in range(n):  # L D Y = P^T B
        X1 = _swap_rows(B, k, kp1[..., k])
        bk = X1[..., k:k + 1, :]
        if k + 1 < n:
            X1 = _set_rows(X1, k + 1, X1[..., k + 1:, :] - LD[..., k + 1:, k:k + 1] * bk)
        X1 = _set_rows(X1, k, bk * (1 / LD[..., k:k + 1, k:k + 1]))
        out = sel(single[k], X1, B)
        if k + 1 < n:
            X2 = _swap_rows(B, k + 1, kp2[..., k])
            b0, b1 = X2[..., k:k + 1, :], X2[..., k + 1:k + 2, :]
            if k + 2 < n:
                rest = X2[..., k + 2:, :] - LD[..., k + 2:, k:k + 1] * b0
                X2 = _set_rows(X2, k + 2, rest - LD[..., k + 2:, k + 1:k + 2] * b1)
            akm1k = LD[..., k + 1:k + 2, k:k + 1]
            akm1 = LD[..., k:k + 1, k:k + 1] / akm1k
            ak = LD[..., k + 1:k + 2, k + 1:k + 2] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk2 = b0 / akm1k, b1 / akm1k
            X2 = _set_rows(X2, k, torch.cat([(ak * bkm1 - bk2) / denom, (akm1 * bk2 - bkm1) / denom], -2))
            out = sel(first[k], X2, out)
        B = out
    for k in range(n - 1, -1, -1):  # L^T X = Y, then undo the interchanges
        if k + 1 < n:
            tail = B[..., k + 1:, :]
            upd_k = B[..., k:k + 1, :] - torch.matmul(_mT(LD[..., k + 1:, k:k + 1]), tail)
        else:
            upd_k = B[..., k:k + 1, :]
        X1 = _swap_rows(_set_rows(B, k, upd_k), k, kp1[..., k])
        out = sel(single[k], X1, B)
        if k >= 1:
            if k + 1 < n:
                upd_km1 = B[..., k - 1:k, :] - torch.matmul(_mT(LD[..., k + 1:, k - 1:k]), B[..., k + 1:, :])
            else:
                upd_km1 = B[..., k - 1:k, :]
            X2 = _set_rows(B, k - 1, torch.cat([upd_km1, upd_k], -2))
            X2 = _swap_rows(X2, k, kp2[..., k])
            out = sel(second[k], X2, out)
        B = out
    return B
