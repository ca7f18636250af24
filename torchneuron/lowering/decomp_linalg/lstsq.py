"""Least squares (``gels``) from the Householder QR."""

from __future__ import annotations

import torch

from ._common import _mT
from .qr import _apply_q, _geqrf
from .triangular import _tri_solve


def _linalg_lstsq(A, B, rcond=None, *, driver=None):
    """Least squares with LAPACK's ``gels`` (full-rank A assumed): QR for m >= n (X = R^-1 Q^T B, residuals
    the squared norms of the rest of Q^T B when m > n), the minimum-norm solution from the QR of A^T for
    m < n. The rank-revealing drivers (gelsy's default, gelsd, gelss) report a rank, which is not
    reproduced here."""
    if driver != "gels":
        return NotImplemented
    m, n = A.shape[-2], A.shape[-1]
    vector = B.ndim == 1 or (A.ndim - 1 == B.ndim and B.shape == A.shape[:-1])  # as linalg.solve
    B_ = B.unsqueeze(-1) if vector else B
    batch = torch.broadcast_shapes(A.shape[:-2], B_.shape[:-2])
    A = A.expand(*batch, m, n)
    B_ = B_.expand(*batch, *B_.shape[-2:])
    k = B_.shape[-1]
    if m >= n:
        a, tau = _geqrf(A)
        qtb = _apply_q(a, tau, B_, left=True, transpose=True)
        X = _tri_solve(a[..., :n, :], qtb[..., :n, :], upper=True)
        res = (qtb[..., n:, :] ** 2).sum(-2) if m > n else A.new_zeros([0])
    else:  # A^T = Q R: A = R^T Q^T, minimum-norm X = Q [R^-T B; 0]
        a, tau = _geqrf(_mT(A))
        y = _tri_solve(_mT(a[..., :m, :]), B_, upper=False)
        X = _apply_q(a, tau, torch.cat([y, y.new_zeros(*batch, n - m, k)], -2), left=True, transpose=False)
        res = A.new_zeros([0])
    if vector:
        X = X.squeeze(-1)
    return X, res, torch.zeros([0], dtype=torch.long, device=A.device), A.new_zeros([0])
