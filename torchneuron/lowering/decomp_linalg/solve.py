"""Determinant, log-determinant, inverse and general solve, all from the LU factorization."""

from __future__ import annotations

import torch

from ._common import _diag, _eye, _mT
from .lu import _lu
from .triangular import _linalg_lu_solve, _lu_solve_left


def _perm_sign(pivots):
    """(-1)^(number of actual row swaps)."""
    k = pivots.shape[-1]
    ident = torch.arange(1, k + 1, dtype=pivots.dtype, device=pivots.device)
    swaps = (pivots != ident).sum(-1)
    return 1 - 2 * torch.bitwise_and(swaps, 1)  # int fmod does not lower


def _linalg_det(A):
    # ATen factors the row-major A as the column-major A^T (its LU and pivots are those of A^T)
    lu, piv, _ = _lu(_mT(A))
    d = _diag(lu)
    det = torch.prod(d, -1) * _perm_sign(piv).to(A.dtype)
    return det, lu, piv


def _linalg_slogdet(A):
    lu, piv, _ = _lu(_mT(A))
    d = _diag(lu)
    sign = torch.prod(torch.sign(d), -1) * _perm_sign(piv).to(A.dtype)
    logabsdet = torch.log(d.abs()).sum(-1)
    return sign, logabsdet, lu, piv


def _linalg_inv_ex(A, *, check_errors=False):
    lu, piv, info = _lu(A)
    n = A.shape[-1]
    inv = _lu_solve_left(lu, piv, _eye(n, A).expand(*A.shape[:-2], n, n), False)
    return inv, info


def _linalg_solve_ex(A, B, *, left=True, check_errors=False):
    vector = B.ndim == 1 or (A.ndim - 1 == B.ndim and B.shape == A.shape[:-1])
    B_ = B.unsqueeze(-1) if vector else B
    lu, piv, info = _lu(A)
    x = _linalg_lu_solve(lu, piv, B_, left=left)
    return (x.squeeze(-1) if vector else x), lu, piv, info
