"""Linear-algebra decompositions (torchneuron/lowering/decomp_linalg/): each op is lowered to StableHLO,
run on XLA:CPU and compared with CPU eager (LAPACK), including batched inputs and the ``info`` outputs
of singular / non-positive-definite matrices."""

import pytest
import torch

import torchneuron

aten = torch.ops.aten
RTOL, ATOL = 1.3e-4, 1e-4


def _run(fn, *args):
    out = torchneuron.lower(fn, *args).compile()(*[a.to("neuron") for a in args])
    return tuple(o.cpu() for o in out) if isinstance(out, (tuple, list)) else out.cpu()


def _check(fn, *args):
    got, want = _run(fn, *args), fn(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
    return got


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _spd(*batch, n, seed=0):
    m = _rand(*batch, n, n, seed=seed)
    return m @ m.mT + 0.5 * torch.eye(n)


def test_lu_factor_pivots_and_info_of_a_singular_matrix():
    a = _rand(2, 4, 4)
    a[1, :, 2] = 0.0  # exactly singular: the third pivot is an exact zero whatever the round-off
    lu, piv, info = _check(lambda x: aten.linalg_lu_factor_ex(x), a)
    assert piv.dtype == torch.int32 and info.tolist() == [0, 3]


def test_lu_rectangular_and_unpack():
    a = _rand(3, 5, seed=1)
    _check(lambda x: aten.linalg_lu(x), a)
    lu, piv, _ = aten.linalg_lu_factor_ex(_rand(5, 3, seed=2))
    _check(lambda x, p: aten.lu_unpack(x, p), lu, piv)


def test_lu_solve_all_sides():
    lu, piv, _ = aten.linalg_lu_factor_ex(_rand(4, 4, seed=3))
    b = _rand(2, 4, 3, seed=4)
    _check(lambda x, p, y: aten.linalg_lu_solve(x, p, y, adjoint=True), lu, piv, b)
    _check(lambda x, p, y: aten.linalg_lu_solve(x, p, y, left=False), lu, piv, b.mT.contiguous())


@pytest.mark.slow
def test_solve_batched_vector_rhs_and_inverse():
    a, b = _rand(3, 4, 4, seed=5), _rand(3, 4, seed=6)
    _check(lambda x, y: aten._linalg_solve_ex(x, y), a, b)
    _check(lambda x: aten.linalg_inv_ex(x), a)


@pytest.mark.slow
def test_det_and_slogdet_including_a_singular_matrix():
    a = _rand(3, 4, 4, seed=7)
    a[2, :, 1] = 0.0  # singular: det 0, slogdet (0, -inf)
    _check(lambda x: aten._linalg_det(x), a)
    _check(lambda x: aten._linalg_slogdet(x)[:2], a)


def test_cholesky_info_is_the_first_bad_leading_minor():
    a = _spd(2, n=4, seed=8)
    a[1, 2, 2] = -10.0
    L, info = _run(lambda x: aten.linalg_cholesky_ex(x), a)
    assert info.tolist() == [0, 3] == aten.linalg_cholesky_ex(a)[1].tolist()
    torch.testing.assert_close(L[0], aten.linalg_cholesky_ex(a)[0][0], rtol=RTOL, atol=ATOL)
    _check(lambda x: aten.linalg_cholesky_ex(x, upper=True), a[:1])


@pytest.mark.slow
def test_cholesky_solve_and_inverse():
    L = aten.linalg_cholesky_ex(_spd(2, n=3, seed=9))[0]
    _check(lambda b, l: aten.cholesky_solve(b, l), _rand(3, 2, seed=10), L)
    _check(lambda l: aten.cholesky_inverse(l, True), L[0].mT.contiguous())


def test_triangular_solves():
    t, b = _rand(2, 4, 4, seed=11), _rand(4, 3, seed=12)
    _check(lambda x, y: aten.linalg_solve_triangular(x, y, upper=True, unitriangular=True), t, b)
    _check(lambda y, x: aten.triangular_solve(y, x, False, True), b, t)


@pytest.mark.slow
def test_householder_qr():
    a = _rand(5, 3, seed=13)
    _check(lambda x: aten.geqrf(x), a)
    _check(lambda x: aten.linalg_qr(x, "complete"), a)
    g, tau = aten.geqrf(a)
    _check(lambda x, t: aten.linalg_householder_product(x, t), g, tau)
    _check(lambda x, t, c: aten.ormqr(x, t, c, False, True), g, tau, _rand(2, 5, seed=14))


def test_cross_and_zero_d_vector_norm():
    _check(lambda x, y: aten.linalg_cross(x, y, dim=1), _rand(2, 3, 4, seed=15), _rand(1, 3, 4, seed=16))
    _check(lambda x: aten.linalg_vector_norm(x, 2.0, [], dtype=torch.float32), torch.tensor(-3.0))


@pytest.mark.slow
def test_jacobi_eigvalsh_svdvals_and_pinv():
    s = _rand(2, 4, 4, seed=17)
    _check(lambda x: aten._linalg_eigh(x, "L", False)[0], s)
    _check(lambda x: aten._linalg_svd(x, False, False)[1], _rand(5, 3, seed=18))
    singular = _rand(4, 2, seed=19) @ _rand(2, 4, seed=20)
    _check(lambda x: torch.linalg.pinv(x), singular)
    _check(lambda x: torch.linalg.pinv(x, hermitian=True), s[0] + s[0].mT)


@pytest.mark.slow
def test_matrix_exp_small_and_large_norms():
    a = _rand(3, 4, 4, seed=21)
    a[0] *= 1e-3  # low-degree Taylor branch
    a[2] *= 4.0  # scaling and squaring
    _check(lambda x: aten.linalg_matrix_exp(x), a)


@pytest.mark.slow
def test_ldl_bunch_kaufman_with_2x2_pivots_and_solve():
    a = _rand(2, 4, 4, seed=22)
    a = a + a.mT
    a.diagonal(dim1=-2, dim2=-1).mul_(1e-3)  # tiny diagonal: Bunch-Kaufman picks 2x2 blocks
    ld, piv, info = _check(lambda x: aten.linalg_ldl_factor_ex(x), a)
    assert (piv < 0).any() and info.tolist() == [0, 0]
    _check(lambda x, p, b: aten.linalg_ldl_solve(x, p, b), ld, piv, _rand(2, 4, 3, seed=23))
