"""Linear-algebra decompositions (torchneuron/lowering/decomp_linalg/): each op is lowered to StableHLO,
run on XLA:CPU and compared with CPU eager (LAPACK), including batched inputs and the ``info`` outputs
of singular / non-positive-definite matrices."""

import pytest
import torch

from tests.lowering.decomp_check import assert_matches, check_fn, lowered_fn

aten = torch.ops.aten


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _spd(*batch, n, seed=0):
    m = _rand(*batch, n, n, seed=seed)
    return m @ m.mT + 0.5 * torch.eye(n)


def test_lu_factor_pivots_and_info_of_a_singular_matrix():
    a = _rand(2, 4, 4)
    a[1, :, 2] = 0.0  # exactly singular: the third pivot is an exact zero whatever the round-off
    lu, piv, info = check_fn(lambda x: aten.linalg_lu_factor_ex(x), a)
    assert piv.dtype == torch.int32 and info.tolist() == [0, 3]


def test_lu_rectangular_and_unpack():
    a = _rand(3, 5, seed=1)
    check_fn(lambda x: aten.linalg_lu(x), a)
    lu, piv, _ = aten.linalg_lu_factor_ex(_rand(5, 3, seed=2))
    check_fn(lambda x, p: aten.lu_unpack(x, p), lu, piv)


def test_lu_solve_all_sides():
    lu, piv, _ = aten.linalg_lu_factor_ex(_rand(4, 4, seed=3))
    b = _rand(2, 4, 3, seed=4)
    check_fn(lambda x, p, y: aten.linalg_lu_solve(x, p, y, adjoint=True), lu, piv, b)
    check_fn(lambda x, p, y: aten.linalg_lu_solve(x, p, y, left=False), lu, piv, b.mT.contiguous())


@pytest.mark.slow
def test_solve_batched_vector_rhs_and_inverse():
    a, b = _rand(3, 4, 4, seed=5), _rand(3, 4, seed=6)
    check_fn(lambda x, y: aten._linalg_solve_ex(x, y), a, b)
    check_fn(lambda x: aten.linalg_inv_ex(x), a)


@pytest.mark.slow
def test_det_and_slogdet_including_a_singular_matrix():
    a = _rand(3, 4, 4, seed=7)
    a[2, :, 1] = 0.0  # singular: det 0, slogdet (0, -inf)
    check_fn(lambda x: aten._linalg_det(x), a)
    check_fn(lambda x: aten._linalg_slogdet(x)[:2], a)


def test_cholesky_info_is_the_first_bad_leading_minor():
    a = _spd(2, n=4, seed=8)
    a[1, 2, 2] = -10.0
    L, info = lowered_fn(lambda x: aten.linalg_cholesky_ex(x), a)
    assert info.tolist() == [0, 3] == aten.linalg_cholesky_ex(a)[1].tolist()
    assert_matches(L[0], aten.linalg_cholesky_ex(a)[0][0])
    check_fn(lambda x: aten.linalg_cholesky_ex(x, upper=True), a[:1])


@pytest.mark.slow
def test_cholesky_solve_and_inverse():
    L = aten.linalg_cholesky_ex(_spd(2, n=3, seed=9))[0]
    check_fn(lambda b, l: aten.cholesky_solve(b, l), _rand(3, 2, seed=10), L)
    check_fn(lambda l: aten.cholesky_inverse(l, True), L[0].mT.contiguous())


def test_triangular_solves():
    t, b = _rand(2, 4, 4, seed=11), _rand(4, 3, seed=12)
    check_fn(lambda x, y: aten.linalg_solve_triangular(x, y, upper=True, unitriangular=True), t, b)
    check_fn(lambda y, x: aten.triangular_solve(y, x, False, True), b, t)


@pytest.mark.slow
def test_householder_qr():
    a = _rand(5, 3, seed=13)
    check_fn(lambda x: aten.geqrf(x), a)
    check_fn(lambda x: aten.linalg_qr(x, "complete"), a)
    g, tau = aten.geqrf(a)
    check_fn(lambda x, t: aten.linalg_householder_product(x, t), g, tau)
    check_fn(lambda x, t, c: aten.ormqr(x, t, c, False, True), g, tau, _rand(2, 5, seed=14))


def test_cross_and_zero_d_vector_norm():
    check_fn(lambda x, y: aten.linalg_cross(x, y, dim=1), _rand(2, 3, 4, seed=15), _rand(1, 3, 4, seed=16))
    check_fn(lambda x: aten.linalg_vector_norm(x, 2.0, [], dtype=torch.float32), torch.tensor(-3.0))


@pytest.mark.slow
def test_jacobi_eigvalsh_svdvals_and_pinv():
    s = _rand(2, 4, 4, seed=17)
    check_fn(lambda x: aten._linalg_eigh(x, "L", False)[0], s)
    check_fn(lambda x: aten._linalg_svd(x, False, False)[1], _rand(5, 3, seed=18))
    singular = _rand(4, 2, seed=19) @ _rand(2, 4, seed=20)
    check_fn(lambda x: torch.linalg.pinv(x), singular)
    check_fn(lambda x: torch.linalg.pinv(x, hermitian=True), s[0] + s[0].mT)


@pytest.mark.slow
def test_matrix_exp_small_and_large_norms():
    a = _rand(3, 4, 4, seed=21)
    a[0] *= 1e-3  # low-degree Taylor branch
    a[2] *= 4.0  # scaling and squaring
    check_fn(lambda x: aten.linalg_matrix_exp(x), a)


@pytest.mark.slow
def test_ldl_bunch_kaufman_with_2x2_pivots_and_solve():
    a = _rand(2, 4, 4, seed=22)
    a = a + a.mT
    a.diagonal(dim1=-2, dim2=-1).mul_(1e-3)  # tiny diagonal: Bunch-Kaufman picks 2x2 blocks
    ld, piv, info = check_fn(lambda x: aten.linalg_ldl_factor_ex(x), a)
    assert (piv < 0).any() and info.tolist() == [0, 0]
    check_fn(lambda x, p, b: aten.linalg_ldl_solve(x, p, b), ld, piv, _rand(2, 4, 3, seed=23))
