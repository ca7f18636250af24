"""Matrix exponential: PyTorch's Taylor-polynomial scaling-and-squaring algorithm, reproduced step by step."""

from __future__ import annotations

import math

import torch

from ._common import _eye


# PyTorch's algorithm (Bader, Blanes & Casas, "Computing the matrix exponential with an optimized Taylor
# polynomial approximation", Mathematics 2019): the degree (1, 2, 4, 8, 12, or 18 with scaling and
# squaring) is chosen from the 1-norm. The same polynomial evaluation schemes are used here, because for
# large norms float32 round-off amplified by the squarings exceeds the comparison tolerance and only the
# same sequence of operations reproduces CPU's digits. The coefficients are the paper's.

_EXP_THETAS = {  # largest 1-norm each degree is accurate for, per dtype (from the paper)
    torch.float32: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                    5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
    torch.float64: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                    4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
}

_T12_COEFFS = (
    (9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
    (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
    (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
    (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359),
)

_T18_COEFFS = (
    (0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.),
    (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
     -6.37898194594723280150e-04),
    (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05),
    (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05),
    (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05),
)


def _powers(A, k: int):
    """The first k of [I, A, A^2, A^3, A^6] (the paper's schemes need A^6 = (A^3)^2, not A^4)."""
    out = [_eye(A.shape[-1], A).expand(A.shape), A]
    if k > 2:
        out.append(torch.matmul(A, A))
    if k > 3:
        out.append(torch.matmul(A, out[2]))
    if k > 4:
        out.append(torch.matmul(out[3], out[3]))
    return out


def _combine(mats, coeffs):
    out = mats[0] * coeffs[0]
    for m, c in zip(mats[1:], coeffs[1:]):
        out = out + m * c
    return out


def _exp_t4(A):
    I, A1, A2 = _powers(A, 3)
    return I + A1 + torch.matmul(A2, _combine([I, A1, A2], (1 / 2.0, 1 / 6.0, 1 / 24.0)))


def _exp_t8(A):
    r = 0.1330413469565007072504e+2  # sqrt(177)
    x3 = 2. / 3.
    x1, x2 = x3 * ((1. + r) / 88.), x3 * ((1. + r) / 352.)
    x4, x5 = (-271. + 29. * r) / (315. * x3), (-11. + 11. * r) / (1260. * x3)
    x6, x7 = (-99. + 11. * r) / (5040. * x3), (89. - r) / (5040. * x3)
    y2 = (857. - 58. * r) / 630.
    I, A1, A2 = _powers(A, 3)
    A4 = torch.matmul(A2, _combine([A1, A2], (x1, x2)))
    A8 = torch.matmul(_combine([A2, A4], (x3, 1.0)), _combine([I, A1, A2, A4], (x4, x5, x6, x7)))
    return I + A1 + A2 * y2 + A8


def _exp_t12(A):
    Bs = [_combine(_powers(A, 4), row) for row in _T12_COEFFS]
    A6 = Bs[2] + torch.matmul(Bs[3], Bs[3])
    return Bs[0] + torch.matmul(Bs[1] + A6, A6)


def _exp_t18(A):
    Bs = [_combine(_powers(A, 5), row) for row in _T18_COEFFS]
    A9 = Bs[3] + torch.matmul(Bs[0], Bs[4])
    return Bs[1] + torch.matmul(Bs[2] + A9, A9)


def _linalg_matrix_exp(A):
    """exp(A) as PyTorch computes it; the degree choice and the number of squarings are data-dependent, so
    every candidate is computed and selected with ``where``, and the squarings are unrolled up to the most a
    finite norm of this dtype can need, each applied under ``where(i < s)``."""
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    if n == 1:
        return torch.exp(A)
    # PyTorch uses the float thetas for float32 only; every other dtype (bfloat16, half) gets double's
    thetas = _EXP_THETAS[torch.float32 if A.dtype == torch.float32 else torch.float64]
    norm = A.abs().sum(-2).amax(-1)
    s = torch.ceil(torch.log2(norm / thetas[5])).clamp(min=0)
    max_squarings = math.ceil(math.log2(torch.finfo(A.dtype).max / thetas[5])) + 1
    s = torch.where(torch.isfinite(s), s, torch.zeros_like(s)).clamp(max=max_squarings)
    half = torch.floor(s / 2)  # 2^s in two halves: 2^s itself overflows float32 for the largest s
    scaled = A / torch.exp2(half).unsqueeze(-1).unsqueeze(-1) / torch.exp2(s - half).unsqueeze(-1).unsqueeze(-1)
    P = _exp_t18(scaled)
    for i in range(max_squarings):
        P = torch.where((s > i).unsqueeze(-1).unsqueeze(-1), torch.matmul(P, P), P)
    # small norms: the lowest degree accurate for the norm, no scaling
    I = _eye(n, A)
    small = [(thetas[0], I + A), (thetas[1], _combine(_powers(A, 3), (1.0, 1.0, 0.5))),
             (thetas[2], _exp_t4(A)), (thetas[3], _exp_t8(A)), (thetas[4], _exp_t12(A))]
    out = P
    for theta, approx in reversed(small):
        # PyTorch routes norm == theta12 to the degree-18 path (the last assignment wins there)
        use = (norm <= theta) if theta != thetas[4] else (norm < theta)
        out = torch.where(use.unsqueeze(-1).unsqueeze(-1), approx, out)
    return out
