"""Hurwitz zeta (Cephes' Euler-Maclaurin algorithm), extended to negative q for integer x."""

from __future__ import annotations

import torch

from ._common import _INF, _NAN, _binary_dtypes, _eps


# Euler-Maclaurin denominators (2k)! / B_2k of Cephes' zeta.
_ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18]


def _zeta_pos(x, q):
    """Hurwitz zeta for q > 0, Cephes' algorithm with its early exits as masks: the first ten terms summed
    directly, the rest by Euler-Maclaurin at w = q + 9 with up to 12 Bernoulli corrections.
    The sum is carried relative to q^-(x-1) (terms (q/(q+i))^x / q <= 1/q), so that for large q the terms,
    which underflow float32 long before their sum does (XLA:CPU flushes subnormals), keep their value."""
    eps = _eps(x)
    inv_q = 1.0 / q
    s = inv_q
    b = s
    for i in range(1, 10):
        b = torch.pow(q / (q + i), x) * inv_q
        s = s + b
    done = b < eps * s           # the remaining terms are negligible: Cephes returns here
    w = q + 9.0
    s = torch.where(done, s, s + b * w / (x - 1.0) - 0.5 * b)
    a = torch.ones_like(x)
    k = torch.zeros_like(x)
    for den in _ZETA_A:
        a = a * (x + k)
        b = b / w
        t = a * b / den
        s = torch.where(done, s, s + t)
        done = done | ((t / s).abs() < eps)
        k = k + 1.0
        a = a * (x + k)
        b = b / w
        k = k + 1.0
    return torch.pow(q, 1.0 - x) * s


def _zeta(x, q):
    """Hurwitz zeta(x, q) = sum_k (q + k)^-x. PyTorch's domain: inf at x == 1 and at non-positive integer q,
    nan for x < 1 and for q < 0 with non-integer x. For q < 0 (x an integer) the terms with a negative base are
    (-1)^x times those of a zeta at r = -q counted down to g = r - (ceil(r) - 1) in (0, 1] (exact, unlike
    frac(q) when q is a tiny negative number), so with f = q - floor(q):
    zeta(x, q) = zeta(x, f) + (-1)^x (zeta(x, g) - zeta(x, r + 1)), all at positive arguments."""
    x, q = torch.broadcast_tensors(x, q)
    neg = q < 0.0
    r = -q
    f = q - torch.floor(q)
    g = r - (torch.ceil(r) - 1.0)
    # one evaluation over the stacked arguments keeps the graph a single copy of the algorithm; lanes that
    # are not needed (or not in the domain) compute garbage that the ``where``s below drop
    zs = _zeta_pos(torch.stack([x, x, x]), torch.stack([torch.where(neg, f, q), g, r + 1.0]))
    parity = torch.where(torch.floor(x * 0.5) == x * 0.5, 1.0, -1.0)
    out = torch.where(neg, zs[0] + parity * (zs[1] - zs[2]), zs[0])
    out = torch.where((q <= 0.0) & (x != torch.floor(x)), _NAN, out)
    out = torch.where((q <= 0.0) & (q == torch.floor(q)), _INF, out)
    out = torch.where(x < 1.0, _NAN, out)
    out = torch.where((x == _INF) & (q > 1.0), _NAN, out)  # PyTorch's series gives inf * 0 there
    return torch.where(x == 1.0, _INF, out)


def _zeta_decomp(x, q):
    if not isinstance(x, torch.Tensor) or not isinstance(q, torch.Tensor):
        return NotImplemented
    comp, out = _binary_dtypes(x, q)
    return _zeta(x.to(comp), q.to(comp)).to(out)
