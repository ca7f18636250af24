"""Neuron decompositions: linear algebra torch-mlir has no StableHLO lowering for.

Matrix sizes are static, so every factorization is written as a Python loop over the (small) matrix
order, unrolled at trace time into elementwise ops, matmuls, ``where`` and ``gather``. The algorithms
follow LAPACK's conventions so the results match what PyTorch returns on CPU:

- LU: partial pivoting on the first row of maximal ``|a|`` (``getrf``), pivots 1-based int32, ``info`` the
  1-based index of the first zero pivot;
- Cholesky: column by column (``potrf``), ``info`` the order of the first leading minor that is not
  positive definite;
- QR: Householder reflections with ``dlarfg``'s sign convention (``geqrf`` / ``orgqr`` / ``ormqr``);
- symmetric eigenvalues and singular values: cyclic Jacobi (two-sided for ``eigh``, one-sided for the SVD)
  with a fixed number of sweeps that depends on the matrix order, then sorted.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .cholesky import _cholesky, _cholesky_inverse, _cholesky_solve, _linalg_cholesky_ex
from .cross import _linalg_cross
from .jacobi import _linalg_eigh, _linalg_pinv, _linalg_svd
from .ldl import _linalg_ldl_factor_ex, _linalg_ldl_solve
from .lstsq import _linalg_lstsq
from .lu import _linalg_lu, _linalg_lu_factor_ex, _lu_unpack
from .matrix_exp import _linalg_matrix_exp
from .qr import _geqrf, _householder_product, _linalg_qr, _ormqr
from .solve import _linalg_det, _linalg_inv_ex, _linalg_slogdet, _linalg_solve_ex
from .triangular import _linalg_lu_solve, _linalg_solve_triangular, _triangular_solve
from .vector_norm import _linalg_vector_norm

aten = torch.ops.aten


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten.linalg_lu_factor_ex.default: _linalg_lu_factor_ex,
        aten.linalg_lu.default: _linalg_lu,
        aten.lu_unpack.default: _lu_unpack,
        aten.linalg_lu_solve.default: _linalg_lu_solve,
        aten.linalg_solve_triangular.default: _linalg_solve_triangular,
        aten.triangular_solve.default: _triangular_solve,
        aten._linalg_det.default: _linalg_det,
        aten._linalg_slogdet.default: _linalg_slogdet,
        aten.linalg_inv_ex.default: _linalg_inv_ex,
        aten._linalg_solve_ex.default: _linalg_solve_ex,
        aten.linalg_cholesky_ex.default: _linalg_cholesky_ex,
        aten.cholesky.default: _cholesky,
        aten.cholesky_solve.default: _cholesky_solve,
        aten.cholesky_inverse.default: _cholesky_inverse,
        aten.linalg_cross.default: _linalg_cross,
        aten.geqrf.default: _geqrf,
        aten.linalg_householder_product.default: _householder_product,
        aten.ormqr.default: _ormqr,
        aten.linalg_qr.default: _linalg_qr,
        aten._linalg_eigh.default: _linalg_eigh,
        aten._linalg_svd.default: _linalg_svd,
        aten.linalg_pinv.atol_rtol_tensor: _linalg_pinv,
        aten.linalg_matrix_exp.default: _linalg_matrix_exp,
        aten.linalg_vector_norm.default: _linalg_vector_norm,
        aten.linalg_lstsq.default: _linalg_lstsq,
        aten.linalg_ldl_factor_ex.default: _linalg_ldl_factor_ex,
        aten.linalg_ldl_solve.default: _linalg_ldl_solve,
    }
