"""FFT and complex-construction decompositions (torchneuron/lowering/decomp_fft/): each ATen op runs through the
strict single-op path (decomposition → StableHLO → XLA:CPU) and is compared with CPU eager."""

import pytest
import torch

from tests.helpers import assert_opinfo_lowers
from tests.lowering.decomp_check import assert_equal, check_fn, check_op, lowered_fn, lowered_op

aten = torch.ops.aten


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randc(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.complex64, generator=_gen(seed))


# --------------------------------------------------------------------------------------------- transforms
@pytest.mark.parametrize("norm, forward", [(0, True), (1, False), (2, True), (2, False)])
def test_c2c_each_norm_and_direction(norm, forward):
    check_op(aten._fft_c2c.default, _randc(3, 7, seed=norm), [1], norm, forward)


def test_c2c_multi_dim_even_and_odd_lengths():
    check_op(aten._fft_c2c.default, _randc(4, 3, 6, seed=1), [0, 2], 1, True)
    check_op(aten._fft_c2c.default, _randc(4, 3, 6, seed=2), [2, 0, 1], 2, False)


@pytest.mark.parametrize("n, onesided, norm", [(8, True, 0), (9, True, 1), (8, False, 2), (9, False, 0)])
def test_r2c_even_odd_onesided(n, onesided, norm):
    x = torch.randn(2, n, generator=_gen(n))
    check_op(aten._fft_r2c.default, x, [1], norm, onesided)


def test_r2c_multi_dim_with_norm():
    x = torch.randn(5, 4, 7, generator=_gen(3))
    check_op(aten._fft_r2c.default, x, [0, 2], 2, True)
    check_op(aten._fft_r2c.default, x, [2, 1], 1, False)


@pytest.mark.parametrize("n, norm", [(10, 0), (11, 1), (10, 2), (11, 2)])
def test_c2r_even_odd_each_norm(n, norm):
    z = _randc(3, n // 2 + 1, seed=n + norm)  # Im of X[0] (and X[n/2], n even) must be ignored
    check_op(aten._fft_c2r.default, z, [1], norm, n)


def test_c2r_multi_dim():
    check_op(aten._fft_c2r.default, _randc(4, 3, 5, seed=4), [0, 2], 2, 8)
    check_op(aten._fft_c2r.default, _randc(4, 3, 2, seed=5), [1, 2], 1, 3)


def test_public_api_round_trip_on_device():
    x = torch.randn(3, 12, generator=_gen(6))

    def f(a):
        spec = torch.fft.rfft(a, norm="ortho")
        return torch.fft.irfft(spec, n=12, norm="ortho"), spec.abs(), torch.fft.fft2(a)

    check_fn(f, x)


@pytest.mark.slow
def test_large_transform_precision():
    x = torch.randn(2, 1024, generator=_gen(7))
    check_op(aten._fft_r2c.default, x, [1], 0, True)
    check_op(aten._fft_c2r.default, torch.fft.rfft(x), [1], 2, 1024)


# ------------------------------------------------------------------------------------ complex plumbing
def test_complex_is_exact_and_broadcasts():
    re, im = torch.randn(4, 5, generator=_gen(8)), torch.randn(5, generator=_gen(9))
    assert_equal(lowered_op(aten.complex.default, re, im), aten.complex.default(re, im))


def test_polar_broadcasts():
    check_op(aten.polar.default, torch.rand(5, 1, generator=_gen(10)), torch.randn(5, generator=_gen(11)))


def test_conj_physical_and_abs_of_complex():
    z = _randc(3, 4, seed=12)
    assert_equal(lowered_op(aten._conj_physical.default, z), aten._conj_physical.default(z))
    check_op(aten.abs.default, z)  # torch-mlir alone gives |Re z| here


def test_view_as_real_and_complex_inside_a_graph():
    z = _randc(2, 3, seed=13)

    def f(a):
        parts = torch.view_as_real(a)
        return parts * 2, a.imag, torch.view_as_complex(parts.flip(-1).contiguous())

    assert_equal(lowered_fn(f, z), f(z))


# ------------------------------------------------------------------------------------------------ OpInfo
def _opinfo(name):
    assert_opinfo_lowers(name)


@pytest.mark.slow  # importing op_db alone takes ~10 s
@pytest.mark.parametrize("name", ["fft.fft", "fft.irfft", "fft.ifftn", "fft.rfft2", "fft.hfftn", "fft.ihfft2",
                                  "stft", "complex", "polar"])
def test_opinfo(name):
    _opinfo(name)


# --------------------------------------------------------------------------------- complex arithmetic
def _binary_cases(op):
    z, w = _randc(3, 4, seed=14), _randc(4, seed=15)
    x = torch.randn(3, 4, generator=_gen(16))
    for args in ((z, w), (x, w), (z, x), (z, 2 - 1j)):
        check_op(op, *args)


def test_complex_mul_with_complex_real_and_scalar_operands():
    _binary_cases(aten.mul.Tensor)


@pytest.mark.slow
@pytest.mark.parametrize("op", [aten.add.Tensor, aten.sub.Tensor, aten.div.Tensor])
def test_complex_binary_with_complex_real_and_scalar_operands(op):
    _binary_cases(op)


def test_complex_division_keeps_extreme_divisors_finite():
    z = _randc(4, seed=17)
    w = torch.tensor([1e-30 + 1e30j, 3 + 0j, 0 + 2j, -1e20 + 1e-20j], dtype=torch.complex64)
    check_op(aten.div.Tensor, z, w)  # |w|² overflows float32: Smith's scaling avoids it
