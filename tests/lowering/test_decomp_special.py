"""Gamma / error-function decompositions (torchneuron/lowering/decomp_special/): each op goes through the
strict single-op path (decomposition -> StableHLO -> XLA:CPU) and is compared with CPU eager, on random
arguments and on the edge cases PyTorch defines (poles, negative integers, +-0, +-inf, nan)."""

import math

import pytest
import torch

from tests.helpers import assert_opinfo_lowers
from tests.lowering.decomp_check import assert_matches, check_op, lowered_op

aten = torch.ops.aten
INF, NAN = math.inf, math.nan

EDGES = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.0, -2.0, -3.0, 0.5, -0.5, 1e-30, 1e30, -1e30, 8.0, 10.0]


def _grid(lo=-12.0, hi=12.0, n=601):
    g = torch.Generator().manual_seed(0)
    return torch.cat([torch.linspace(lo, hi, n), torch.randn(200, generator=g) * 4, torch.tensor(EDGES)])


def _bits(t):
    return t.view({torch.float32: torch.int32, torch.bfloat16: torch.int16}[t.dtype])


@pytest.mark.parametrize("op", [aten.erfc.default, aten.special_erfcx.default, aten.special_log_ndtr.default,
                                aten.lgamma.default, aten.digamma.default], ids=lambda o: o._opname)
def test_unary_float32(op):
    check_op(op, _grid())


def test_erfc_tail_keeps_relative_accuracy():
    # 1 - erf(x) would be 0 (or pure rounding noise) long before erfc underflows
    x = torch.linspace(4.0, 9.0, 101)
    got, ref = lowered_op(aten.erfc.default, x).double(), torch.erfc(x.double())
    assert ((got - ref).abs() / ref).max() < 2e-6


def test_erfinv_and_ndtri_over_their_domain():
    g = torch.Generator().manual_seed(1)
    p = torch.cat([torch.rand(500, generator=g), torch.logspace(-37, -1, 60), 1 - torch.logspace(-7, -1, 30),
                   torch.tensor([0.0, 1.0, -0.25, 1.25, NAN, 0.5])])
    check_op(aten.special_ndtri.default, p)
    check_op(aten.erfinv.default, torch.cat([2 * p - 1, torch.tensor([-1.0, 1.0, 1e-30])]))


def test_lgamma_near_its_zeros_and_poles():
    # relative accuracy around the zeros at 1 and 2 comes from the series about 2, not from cancellation
    x = torch.tensor([1.0 + 1e-4, 1.0 - 1e-4, 2.0 + 1e-4, 2.0 - 1e-4, 1.0, 2.0])
    got, ref = lowered_op(aten.lgamma.default, x).double(), torch.lgamma(x.double())
    nz = ref != 0
    assert ((got - ref).abs()[nz] / ref.abs()[nz]).max() < 1e-5 and (got[~nz] == 0).all()
    poles = torch.tensor([0.0, -0.0, -1.0, -7.0, -INF, INF, -1e9])
    assert torch.isposinf(lowered_op(aten.lgamma.default, poles)).all()


def test_digamma_signed_zero_and_negative_integers():
    x = torch.tensor([0.0, -0.0, -1.0, -4.0, -INF, INF])
    got = lowered_op(aten.digamma.default, x)
    assert got[0] == -INF and got[1] == INF and torch.isnan(got[2:5]).all() and got[5] == INF


@pytest.mark.parametrize("n", [pytest.param(1, marks=pytest.mark.slow), 3])
def test_polygamma(n):
    check_op(aten.polygamma.default, n, _grid(n=301))


def test_zeta_both_arguments():
    g = torch.Generator().manual_seed(2)
    x = torch.cat([torch.tensor([1.0, 0.5, 2.0, 3.0, 4.0, 7.0, INF, NAN]), torch.rand(12, generator=g) * 9 + 1])
    q = torch.cat([torch.linspace(-9, 9, 73), torch.tensor([0.0, -1e-6, 1e-3, 1e3, 1e10, INF, NAN])])
    check_op(aten.special_zeta.default, x.repeat_interleave(len(q)), q.repeat(len(x)))


def test_zeta_keeps_large_q_from_underflowing():
    # terms (q + i)^-5 are below float32's normal range here while the sum, ~ q^-4 / 4, is not
    q = torch.tensor([1e7, 4e7])
    got = lowered_op(aten.special_zeta.default, torch.full_like(q, 5.0), q).double()
    ref = torch.special.zeta(torch.full_like(q, 5.0).double(), q.double())
    assert ((got - ref).abs() / ref).max() < 1e-5


@pytest.mark.parametrize("op", [aten.igamma.default, pytest.param(aten.igammac.default, marks=pytest.mark.slow)],
                         ids=lambda o: o._opname)
def test_igamma_igammac(op):
    # a <= 20: series / continued fraction; a > 20: Temme's expansion; plus PyTorch's special values
    a = torch.cat([torch.logspace(-4, 1.3, 12), torch.logspace(1.31, 5, 8),
                   torch.tensor([0.0, -1.0, 1.0, 20.0, 21.0, INF, NAN])])
    x = torch.cat([torch.logspace(-5, 5.5, 30), torch.tensor([0.0, -1.0, 1.1, INF, NAN])])
    aa, xx = a.repeat_interleave(len(x)), x.repeat(len(a))
    got = lowered_op(op, aa, xx)
    assert_matches(got, op(aa, xx))
    exact = op(aa.double(), xx.double())
    keep = exact > 1e-30
    assert ((got.double() - exact).abs()[keep] / exact[keep]).max() < 1e-4  # relative, deep into the tails


def test_nextafter_and_frexp_bit_exact():
    vals = torch.tensor([0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 1e-45, -1e-45, 1.17549435e-38, 3.4028235e38, -INF,
                         INF, NAN, 0.3, -7.5])
    x, y = vals.repeat_interleave(len(vals)), vals.repeat(len(vals))
    got, ref = lowered_op(aten.nextafter.default, x, y), torch.nextafter(x, y)
    assert ((_bits(got) == _bits(ref)) | torch.isnan(ref)).all()
    m, e = lowered_op(aten.frexp.Tensor, vals)
    rm, re = torch.frexp(vals)
    assert ((_bits(m) == _bits(rm)) | torch.isnan(rm)).all() and torch.equal(e, re)


def test_bfloat16():
    x = _grid(n=201).to(torch.bfloat16)
    check_op(aten.lgamma.default, x)  # bfloat16's tolerance
    xs, ys = x[:-len(EDGES)], x.flip(0)[:-len(EDGES)]
    got, ref = lowered_op(aten.nextafter.default, xs, ys), torch.nextafter(xs, ys)
    assert (_bits(got) == _bits(ref)).all()


@pytest.mark.slow
def test_opinfo_samples():
    for name in ("special.zeta", "polygamma.polygamma_n_2", "mvlgamma.mvlgamma_p_3", "frexp"):
        for dtype in ("float32", "bfloat16"):
            assert_opinfo_lowers(name, dtype, allowed=("lowered", "n/a"))
