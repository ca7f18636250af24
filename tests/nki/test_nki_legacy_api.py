"""Legacy (`neuronxcc.nki`) API surface AWS documents and kernels use: loop directives, dma_transpose
options, per-target matmul perf modes, the `nki.tensor` class. Values against NumPy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.compiler as ncc
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(34)
f32 = standard_normal_f32(RNG)


def test_loops_take_compiler_directives() -> None:
    @nki.jit(mode="simulation")
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, a.shape[2]), nl.float32, buffer=nl.sbuf)
        for i in nl.sequential_range(a.shape[0], directives=ncc.multi_buffer(2) if hasattr(ncc, "multi_buffer")
                                     else None):
            acc += nl.load(a[i])
        for i in nl.affine_range(a.shape[0], directives=None):
            nl.store(out[i], acc)
        return out

    x = f32(3, 128, 16)
    np.testing.assert_allclose(k(x), np.broadcast_to(x.sum(0), x.shape), rtol=1e-5, atol=1e-5)


def test_dma_transpose_takes_dge_mode_and_axes() -> None:
    @nki.jit(mode="simulation", platform_target="trn2")
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nisa.dma_transpose(a, axes=(1, 0), dge_mode=nisa.dge_mode.unknown))
        return out

    x = f32(64, 32)
    np.testing.assert_array_equal(k(x), x.T)


def _double_row_kernel(target: str):
    @nki.jit(mode="simulation", platform_target=target)
    def k(a, b):
        out = nl.ndarray((a.shape[2], b.shape[2]), nl.float32, buffer=nl.shared_hbm)
        res = nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode="double_row_gen3")
        nl.store(out, nl.copy(res))
        return out
    return k


def test_nc_matmul_double_row_gen3_on_trn2() -> None:
    a = RNG.uniform(-1, 1, (128, 2, 16)).astype(ml_dtypes.float8_e5m2)
    b = RNG.uniform(-1, 1, (128, 2, 64)).astype(ml_dtypes.float8_e5m2)
    want = np.einsum("kli,klj->ij", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(_double_row_kernel("trn2")(a, b), want, rtol=1e-5, atol=1e-4)


def test_nc_matmul_double_row_gen3_elsewhere_is_refused() -> None:
    a = np.ones((128, 2, 16), ml_dtypes.float8_e5m2)
    with pytest.raises(nki.NkiError, match="double_row_gen3"):
        _double_row_kernel("trn3")(a, a)


def test_nki_tensor_is_the_kernel_tensor_class() -> None:
    seen = []

    @nki.jit(mode="simulation")
    def k(a):
        seen.append(isinstance(a, nki.tensor))
        a.assert_shape((128, 8))
        out = nl.ndarray((128, 1, 8), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        seen.append(isinstance(t, nki.tensor) and t.itemsize == 4 and t.ndim == 2)
        nl.store(out, t.expand_dims(1))
        return out

    x = f32(128, 8)
    np.testing.assert_array_equal(k(x), x[:, None, :])
    assert seen == [True, True]

    @nki.jit(mode="simulation")
    def bad(a):
        a.assert_shape((64, 8))
        return a

    with pytest.raises(nki.NkiError, match="asserted"):
        bad(x)


@pytest.mark.parametrize("target,generation", [("trn1", 2), ("trn2", 3), ("trn3", 4)])
def test_jit_platform_target_picks_the_generation(target: str, generation: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    seen = []

    @nki.jit(mode="simulation", platform_target=target)
    def k(a):
        seen.append(int(nisa.get_nc_version()))
        return a

    k(f32(2, 2))
    assert seen == [generation]


def test_benchmark_of_a_jit_kernel_keeps_its_target_and_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """`nki.benchmark(k)` of a kernel jitted for trn1 (or indexed with a grid) runs it as it was made."""
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    seen = []

    @nki.jit(platform_target="trn1")
    def k(a):
        seen.append((int(nisa.get_nc_version()), int(nl.program_id(0)) if nl.num_programs(0) else 0))
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    x = f32(128, 64)
    bench = nki.benchmark(warmup=1, iters=1)(k)
    np.testing.assert_array_equal(bench(x), x)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) > 0
    assert seen == [(2, 0)]
    seen.clear()
    nki.benchmark(warmup=1, iters=1)(k[2])(x)
    assert sorted(seen) == [(2, 0), (2, 1)]
