"""The degree-as-a-tensor machinery shared by the orthogonal polynomials: overload dispatch with
TensorIterator's promotion, degree truncation, and the unrolled three-term recurrence."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._common import _compute_dtype, _float_result, _like, aten

_INT64_LIMIT = 2.0 ** 63


def _binary(kernel: Callable, name: str) -> dict:
    """The Tensor/Tensor, Scalar/Tensor and Tensor/Scalar overloads of a polynomial op.

    As TensorIterator does, x and n are promoted to the result dtype before the kernel (so an int64 n is
    rounded to float); the kernel then truncates n to an integer. Non-finite n or n >= 2**63 (where C++'s
    float -> int64 conversion gives INT64_MIN on x86) count as negative degrees.
    """
    def default(x, n):
        out_dtype = _float_result(torch.result_type(x, n))
        cdt = _compute_dtype(out_dtype)
        x = _as_tensor(x, out_dtype).to(cdt)
        n = _trunc(_as_tensor(n, out_dtype).to(cdt))
        n = torch.where(torch.isfinite(n) & (n < _INT64_LIMIT), n, _like(n, -1.0))
        x, n = torch.broadcast_tensors(x, n)
        return kernel(x, n).to(out_dtype)

    packet = getattr(aten, name)
    return {packet.default: default, packet.x_scalar: default, packet.n_scalar: default}


def _trunc(n):
    # not aten.trunc: torch-mlir folds trunc of a constant (a Scalar degree) with the wrong sign
    return torch.where(n < 0.0, torch.ceil(n), torch.floor(n))


def _as_tensor(v, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        return v.to(dtype)
    return aten.scalar_tensor.default(v, dtype=dtype)


def _is_odd(n):
    return (n - 2.0 * torch.floor(n * 0.5)) == 1.0


def _parity_sign(n, mask):
    """-1 where ``mask`` and n is odd, else 1."""
    return torch.where(mask & _is_odd(n), _like(n, -1.0), _like(n, 1.0))


def _unrolled(n, first: torch.Tensor, step: Callable, steps: int, beyond: torch.Tensor) -> torch.Tensor:
    """The three-term recurrence p_0 = 1, p_1 = first, p_k = step(k, p_{k-2}, p_{k-1}), evaluated in the same
    operation order as PyTorch's loop, with p_n selected for 0 <= n <= steps (``beyond`` elsewhere)."""
    p, q = torch.ones_like(first), first
    out = torch.where(n == 0.0, p, torch.where(n == 1.0, q, beyond))
    for k in range(2, steps + 1):
        p, q = q, step(k, p, q)
        out = torch.where(n == float(k), q, out)
    return out
