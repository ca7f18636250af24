"""Cyclic Jacobi: symmetric eigenvalues (two-sided), singular values (one-sided) and the pseudo-inverse
built from them."""

from __future__ import annotations

import math

import torch

from ._common import _diag, _eye, _index, _mT


def _round_robin(n: int) -> list[list[tuple[int, int]]]:
    """Tournament schedule: n-1 (n even) rounds of disjoint pairs covering every pair (p < q) once, so each
    round's rotations commute and apply as one matrix."""
    N = n + n % 2
    players = list(range(N))
    rounds = []
    for _ in range(N - 1):
        pairs = [tuple(sorted((players[i], players[N - 1 - i]))) for i in range(N // 2)]
        rounds.append([(p, q) for p, q in pairs if q < n])
        players = [players[0], players[-1]] + players[1:-1]
    return [r for r in rounds if r]


def _jacobi_sweeps(n: int) -> int:
    """Number of cyclic sweeps. Measured in float64 (random, graded 1..1e-7, rank-2 and nearly dependent
    matrices) the eigen/singular values reach float32 round-off (1e-7 relative) after 3 sweeps for n=3,
    4 for n=5, 5 for n=8, 6 for n=10, 7 for n=12 and 8 for n=16; ceil(log2 n) + 5 keeps one or more
    sweeps of margin (quadratic convergence: a spare sweep squares the residual). Extra sweeps are
    harmless: the rotation of an already-orthogonal pair is the identity."""
    return max(5, math.ceil(math.log2(max(n, 2))) + 5)


def _round_selectors(pairs, n: int, like):
    """Constants of one round: the flat indices of (app, aqq, apq) and the 0/±1 matrices that scatter
    (c - 1) onto the diagonal entries and s onto the off-diagonal ones of the rotation matrix."""
    dev = like.device
    flat = _index([p * n + p for p, q in pairs] + [q * n + q for p, q in pairs] + [p * n + q for p, q in pairs], dev)
    f = torch.arange(n * n, device=dev).unsqueeze(-1)
    pp, qq, pq, qp = (_index([a * n + b for a, b in idx], dev) for idx in (
        [(p, p) for p, q in pairs], [(q, q) for p, q in pairs], pairs, [(q, p) for p, q in pairs]))
    diag_sel = ((f == pp) | (f == qq)).to(like.dtype)  # (n*n, h)
    off_sel = (f == pq).to(like.dtype) - (f == qp).to(like.dtype)
    return flat, diag_sel, off_sel


def _jacobi_round(S, selectors, n: int):
    """The rotation matrix J (..., n, n) of one round: for each pair the Jacobi rotation that zeroes
    (J^T S J)[p, q] (Golub & Van Loan's symmetric Schur decomposition, the smaller angle)."""
    flat, diag_sel, off_sel = selectors
    h = diag_sel.shape[-1]
    vals = S.reshape(*S.shape[:-2], n * n).index_select(-1, flat)
    app, aqq, apq = vals[..., :h], vals[..., h:2 * h], vals[..., 2 * h:]
    zero = apq == 0
    safe = torch.where(zero, torch.ones_like(apq), apq)
    tau = (aqq - app) / (2 * safe)
    sgn = torch.where(tau >= 0, torch.ones_like(tau), -torch.ones_like(tau))
    t = sgn / (tau.abs() + torch.sqrt(1 + tau * tau))
    t = torch.where(zero, torch.zeros_like(t), t)
    c = torch.rsqrt(1 + t * t)
    sn = t * c
    # J = I + sum_j (c_j - 1)(E_pp + E_qq) + s_j (E_pq - E_qp)
    upd = torch.matmul(diag_sel, (c - 1).unsqueeze(-1)) + torch.matmul(off_sel, sn.unsqueeze(-1))
    return _eye(n, S) + upd.reshape(*S.shape[:-2], n, n)


def _schedule(n: int, like):
    return [_round_selectors(pairs, n, like) for pairs in _round_robin(n)]


def _jacobi_eigh(S, vectors: bool):
    """Eigenvalues (unsorted, on the diagonal of the result) of the symmetric S by cyclic Jacobi; with
    ``vectors`` also the accumulated rotations V (S = V diag V^T)."""
    n = S.shape[-1]
    V = _eye(n, S).expand(S.shape).clone() if vectors else None
    schedule = _schedule(n, S)
    for _ in range(_jacobi_sweeps(n)):
        for sel in schedule:
            J = _jacobi_round(S, sel, n)
            S = torch.matmul(torch.matmul(_mT(J), S), J)
            if vectors:
                V = torch.matmul(V, J)
    return _diag(S), V


def _jacobi_svd(G, vectors: bool):
    """One-sided (Hestenes) Jacobi on the columns of G (..., m, n): rotate column pairs until they are
    orthogonal; the singular values are then the column norms (unsorted). Each rotation is the symmetric
    Jacobi rotation of the Gram matrix G^T G, recomputed from G every round (no squared-error build-up).
    Returns (sigma, G rotated, V)."""
    n = G.shape[-1]
    V = _eye(n, G).expand(*G.shape[:-2], n, n).clone() if vectors else None
    schedule = _schedule(n, G)
    for _ in range(_jacobi_sweeps(n)):
        for sel in schedule:
            J = _jacobi_round(torch.matmul(_mT(G), G), sel, n)
            G = torch.matmul(G, J)
            if vectors:
                V = torch.matmul(V, J)
    return torch.linalg.vector_norm(G, dim=-2), G, V


def _sym_from(A, uplo: str):
    """The symmetric matrix LAPACK sees when it reads only the ``uplo`` triangle of A."""
    if uplo.upper() == "L":
        return torch.tril(A) + _mT(torch.tril(A, -1))
    return torch.triu(A) + _mT(torch.triu(A, 1))


def _eigvalsh(A, uplo="L"):
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.new_zeros(A.shape[:-1])
    w, _ = _jacobi_eigh(_sym_from(A, uplo), False)
    return torch.sort(w, -1)[0]


def _svdvals(A):
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    if k == 0 or A.numel() == 0:
        return A.new_zeros(A.shape[:-2] + (k,))
    G = A if m >= n else _mT(A)
    s, _, _ = _jacobi_svd(G, False)
    return torch.sort(s, -1, descending=True)[0]


def _linalg_eigh(A, UPLO="L", compute_v=True):
    if compute_v:
        # eigenvectors are defined up to sign and LAPACK's choice (syevd's QL path) is not replicated
        return NotImplemented
    return _eigvalsh(A, UPLO), A.new_zeros([0])


def _linalg_svd(A, full_matrices=False, compute_uv=True, driver=None):
    if compute_uv:
        return NotImplemented  # singular vectors: sign ambiguity vs LAPACK, see _linalg_eigh
    return A.new_zeros([0]), _svdvals(A), A.new_zeros([0])


def _pinv_tol(A, smax, atol, rtol):
    """max(atol, rtol * smax) with PyTorch's defaults (rtol = eps * max(m, n) unless atol > 0 is given)."""
    m, n = A.shape[-2], A.shape[-1]
    default_rtol = torch.finfo(A.dtype).eps * max(m, n)
    atol_t = atol.to(A.dtype) if atol is not None else torch.zeros((), dtype=A.dtype, device=A.device)
    if rtol is not None:
        rtol_t = rtol.to(A.dtype)
    elif atol is not None:
        rtol_t = torch.where(atol_t > 0, torch.zeros_like(atol_t), torch.full_like(atol_t, default_rtol))
    else:
        rtol_t = torch.full((), default_rtol, dtype=A.dtype, device=A.device)
    return torch.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * smax)


def _linalg_pinv(A, *, atol=None, rtol=None, hermitian=False):
    """Pseudo-inverse from the Jacobi eigen/singular decomposition (the pseudo-inverse is unique, so any
    decomposition gives PyTorch's result); singular values at or below the tolerance are dropped."""
    m, n = A.shape[-2], A.shape[-1]
    if A.numel() == 0:
        return A.new_zeros(A.shape[:-2] + (n, m))
    if hermitian:
        w, V = _jacobi_eigh(_sym_from(A, "L"), True)
        tol = _pinv_tol(A, w.abs().amax(-1, keepdim=True), atol, rtol)
        keep = w.abs() > tol
        inv = torch.where(keep, 1 / torch.where(keep, w, torch.ones_like(w)), torch.zeros_like(w))
        return torch.matmul(V * inv.unsqueeze(-2), _mT(V))
    if m < n:
        return _mT(_linalg_pinv(_mT(A), atol=atol, rtol=rtol))
    s, G, V = _jacobi_svd(A, True)  # A V = G = U diag(s)
    tol = _pinv_tol(A, s.amax(-1, keepdim=True), atol, rtol)
    keep = s > tol
    inv2 = torch.where(keep, 1 / torch.where(keep, s * s, torch.ones_like(s)), torch.zeros_like(s))
    return torch.matmul(V * inv2.unsqueeze(-2), _mT(G))  # V diag(1/s^2) G^T = V diag(1/s) U^T
