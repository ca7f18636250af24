"""Triangular solves by substitution, and the LU solve built on them."""

from __future__ import annotations

import torch

from ._common import _mT
from .lu import _perm_matrix


def _tri_solve(T, B, *, upper: bool, unit: bool = False):
    """Solve ``T X = B`` (T triangular, batch dims broadcast) by forward/back substitution, one row at a
    time; only the referenced triangle of ``T`` is read."""
    n = T.shape[-1]
    batch = torch.broadcast_shapes(T.shape[:-2], B.shape[:-2])
    T = T.expand(*batch, n, n)
    B = B.expand(*batch, n, B.shape[-1])
    xs: list = [None] * n
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        acc = B[..., i:i + 1, :]
        lo, hi = (i + 1, n) if upper else (0, i)
        if hi > lo:  # subtract the already-solved unknowns
            known = torch.cat([xs[j] for j in range(lo, hi)], -2)
            acc = acc - torch.matmul(T[..., i:i + 1, lo:hi], known)
        xs[i] = acc if unit else acc / T[..., i:i + 1, i:i + 1]
    if n == 0:
        return B.clone()
    return torch.cat(xs, -2)


def _linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    if left:
        return _tri_solve(A, B, upper=upper, unit=unitriangular)
    # X A = B  <=>  A^T X^T = B^T
    return _mT(_tri_solve(_mT(A), _mT(B), upper=not upper, unit=unitriangular))


def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    batch = torch.broadcast_shapes(b.shape[:-2], A.shape[:-2])
    A_b = A.expand(*batch, *A.shape[-2:])
    T, up = (_mT(A_b), not upper) if transpose else (A_b, upper)
    return _tri_solve(T, b, upper=up, unit=unitriangular), A_b.clone()


def _lu_solve_left(lu, pivots, B, adjoint: bool):
    n = lu.shape[-1]
    P = _perm_matrix(pivots, n, lu.dtype)
    if not adjoint:  # A = P L U:  X = U^-1 L^-1 P^T B
        y = _tri_solve(lu, torch.matmul(_mT(P), B), upper=False, unit=True)
        return _tri_solve(lu, y, upper=True)
    # A^T = U^T L^T P^T:  X = P L^-T U^-T B
    luT = _mT(lu)
    y = _tri_solve(luT, B, upper=False)
    y = _tri_solve(luT, y, upper=True, unit=True)
    return torch.matmul(P, y)


def _linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    if left:
        out = _lu_solve_left(LU, pivots, B, adjoint)
    else:  # X A = B  <=>  A^T X^T = B^T
        out = _mT(_lu_solve_left(LU, pivots, _mT(B), not adjoint))
    batch = torch.broadcast_shapes(LU.shape[:-2], B.shape[:-2])
    return out.expand(*batch, *out.shape[-2:]).clone() if out.shape[:-2] != batch else out
