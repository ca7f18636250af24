"""Cephes' Chebyshev-series evaluator (``chbevl``), unrolled so the coefficient tables become static
elementwise graphs (``polevl`` is shared: ``lowering/decomp_common.py``)."""

from __future__ import annotations

import torch


def _chbevl(y: torch.Tensor, coeffs: tuple[float, ...]) -> torch.Tensor:
    """Cephes ``chbevl``: sum of a Chebyshev series at ``y`` by Clenshaw's recurrence, unrolled."""
    b2 = 0.0
    b1 = coeffs[0]
    b0 = y * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)

