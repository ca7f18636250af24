"""Householder QR as LAPACK ``geqrf`` / ``orgqr`` / ``ormqr``, and ``linalg.qr`` on top."""

from __future__ import annotations

import torch

from ._common import _eye, _mT, _set_col


def _householder(alpha, x):
    """LAPACK ``dlarfg``: reflector H = I - tau [1; v][1; v]^T with H [alpha; x] = [beta; 0],
    beta = -sign(alpha) * ||[alpha; x]||; tau = 0 (H = I) when x is already zero."""
    xnorm = torch.linalg.vector_norm(x, dim=-1) if x.shape[-1] else torch.zeros_like(alpha)
    norm = torch.sqrt(alpha * alpha + xnorm * xnorm)
    beta = torch.where(alpha >= 0, -norm, norm)
    trivial = xnorm == 0
    safe_beta = torch.where(trivial, torch.ones_like(beta), beta)
    tau = torch.where(trivial, torch.zeros_like(alpha), (beta - alpha) / safe_beta)
    denom = torch.where(trivial, torch.ones_like(alpha), alpha - beta)
    v = torch.where(trivial.unsqueeze(-1), x, x / denom.unsqueeze(-1))
    return torch.where(trivial, alpha, beta), v, tau


def _reflect_left(X, u, tau):
    """(I - tau u u^T) X for the full-length vector u (..., m)."""
    w = torch.matmul(u.unsqueeze(-2), X)
    return X - (tau.unsqueeze(-1).unsqueeze(-1) * u.unsqueeze(-1)) * w


def _reflector_vector(a, i: int):
    """Full-length u_i = [0 (i times), 1, a[i+1:, i]] of the i-th reflector stored in ``a`` (geqrf layout)."""
    parts = [torch.zeros_like(a[..., :i, i]), torch.ones_like(a[..., i:i + 1, i]), a[..., i + 1:, i]]
    return torch.cat(parts, -1)


def _geqrf(A):
    """Householder QR as LAPACK ``geqr2``: R in the upper triangle, reflector vectors below, and tau."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    a, taus = A, []
    for i in range(k):
        if i == m - 1:  # dlarfg on a single element: H = I
            taus.append(torch.zeros_like(a[..., i, i]))
            continue
        beta, v, tau = _householder(a[..., i, i], a[..., i + 1:, i])
        taus.append(tau)
        col = torch.cat([a[..., :i, i], beta.unsqueeze(-1), v], -1)
        u = _reflector_vector(_set_col(a, i, col), i)
        rest = _reflect_left(a[..., :, i + 1:], u, tau)
        a = torch.cat([a[..., :, :i], col.unsqueeze(-1), rest], -1)
    tau_t = torch.stack(taus, -1) if k else A.new_zeros(A.shape[:-2] + (0,))
    return a.clone() if k == 0 else a, tau_t


def _apply_q(a, tau, C, *, left: bool, transpose: bool):
    """Q C, Q^T C, C Q or C Q^T with Q = H_0 H_1 ... H_{k-1} from the reflectors in ``a`` / ``tau``."""
    k = tau.shape[-1]
    if not left:  # C Q = (Q^T C^T)^T
        return _mT(_apply_q(a, tau, _mT(C), left=True, transpose=not transpose))
    batch = torch.broadcast_shapes(a.shape[:-2], C.shape[:-2])
    X = C.expand(*batch, *C.shape[-2:])
    # Q C applies H_{k-1} first; Q^T C = H_{k-1} ... H_0 C applies H_0 first
    order = range(k) if transpose else range(k - 1, -1, -1)
    for i in order:
        X = _reflect_left(X, _reflector_vector(a, i), tau[..., i])
    return X.clone() if k == 0 else X


def _householder_product(A, tau):
    m, n = A.shape[-2], A.shape[-1]
    eye = _eye(m, A, n).expand(*A.shape[:-2], m, n)
    return _apply_q(A, tau, eye, left=True, transpose=False)


def _ormqr(A, tau, C, left=True, transpose=False):
    return _apply_q(A, tau, C, left=left, transpose=transpose)


def _linalg_qr(A, mode="reduced"):
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = A.shape[:-2]
    q_cols = m if mode == "complete" else k
    r_rows = m if mode == "complete" else k
    if k == 0 or A.numel() == 0:  # no reflectors: Q is the identity (empty slices trip torch-mlir)
        R = A.new_zeros(batch + (r_rows, n))
        Q = _eye(m, A, q_cols).expand(*batch, m, q_cols).clone()
    else:
        a, tau = _geqrf(A)
        R = torch.triu(a[..., :r_rows, :])
        Q = _apply_q(a, tau, _eye(m, A, q_cols).expand(*batch, m, q_cols), left=True, transpose=False)
    return (A.new_zeros([0]) if mode == "r" else Q), R
