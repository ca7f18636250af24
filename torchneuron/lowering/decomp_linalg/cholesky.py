"""Cholesky factorization as LAPACK ``potrf``, and the solve and inverse built on it."""

from __future__ import annotations

import torch

from ._common import _eye, _first_true_1based, _mT, _set_col
from .triangular import _tri_solve


def _cholesky_lower(A):
    """Cholesky factor L (A = L L^T, lower triangle of A read) column by column, and ``info``: the order of
    the first leading minor whose pivot ``a_jj - sum l_jk^2`` is not positive (or NaN), as ``potrf``."""
    n = A.shape[-1]
    L = torch.zeros_like(A)
    bad = []
    for j in range(n):
        col = A[..., j:, j]
        if j:
            col = col - torch.matmul(L[..., j:, :j], L[..., j, :j].unsqueeze(-1)).squeeze(-1)
        d = col[..., 0]
        bad.append(~(d > 0))
        root = torch.sqrt(d)
        new = torch.cat([root.unsqueeze(-1), col[..., 1:] / root.unsqueeze(-1)], -1)
        new = torch.cat([torch.zeros_like(A[..., :j, j]), new], -1)
        L = _set_col(L, j, new)
    if n == 0:
        return L, torch.zeros(A.shape[:-2], dtype=torch.int32, device=A.device)
    return L, _first_true_1based(torch.stack(bad, -1))


def _linalg_cholesky_ex(A, *, upper=False, check_errors=False):
    if upper:  # potrf('U') reads the upper triangle: factor its transpose
        L, info = _cholesky_lower(_mT(A))
        return _mT(L), info
    return _cholesky_lower(A)


def _cholesky(A, upper=False):
    return _linalg_cholesky_ex(A, upper=upper)[0]


def _cholesky_solve(B, L, upper=False):
    """Solve (L L^T) X = B (or (U^T U) X = B) with two triangular solves."""
    if upper:
        y = _tri_solve(_mT(L), B, upper=False)
        return _tri_solve(L, y, upper=True)
    y = _tri_solve(L, B, upper=False)
    return _tri_solve(_mT(L), y, upper=True)


def _cholesky_inverse(L, upper=False):
    n = L.shape[-1]
    return _cholesky_solve(_eye(n, L).expand(*L.shape[:-2], n, n), L, upper)
