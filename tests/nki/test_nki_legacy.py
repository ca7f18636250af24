"""The legacy (`neuronxcc.nki` 0.1) front end: modes, grids, affine indexing, masks, block dims, tile
operators, ISA calls returning tiles, static_cast, typing annotations, NumPy operators."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl
import torchneuron.nki.legacy.typing as nt
from torchneuron.nki import errors as nki_errors

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(7)
f32 = standard_normal_f32(RNG)


@nki.jit(mode="simulation")
def add_grid_kernel(a_input, b_input):
    """The SDK tutorial shape: one 128x512 tile per program of a 2-D grid."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    offset_i_x = nl.program_id(0) * 128
    offset_i_y = nl.program_id(1) * 512
    ix = offset_i_x + nl.arange(128)[:, None]
    iy = offset_i_y + nl.arange(512)[None, :]
    a_tile = nl.load(a_input[ix, iy])
    b_tile = nl.load(b_input[ix, iy])
    nl.store(c_output[ix, iy], value=a_tile + b_tile)
    return c_output


def test_grid_kernel_via_jit_and_simulate_kernel() -> None:
    a, b = f32(256, 1024), f32(256, 1024)
    np.testing.assert_array_equal(add_grid_kernel[2, 2](a, b), a + b)
    np.testing.assert_array_equal(nki.simulate_kernel(add_grid_kernel[2, 2], a, b), a + b)
    with pytest.warns(nki_errors.NkiWarning, match="196608 of 262144 elements never written"):
        only_first = nki.simulate_kernel(add_grid_kernel[1, 1], a, b)
    np.testing.assert_array_equal(only_first[:128, :512], (a + b)[:128, :512])
    assert np.isnan(only_first[128:]).all()  # the rest of the shared output was never written
    np.testing.assert_array_equal(nki.baremetal(add_grid_kernel)[2, 2](a, b), a + b)


def test_program_queries_and_spmd_dims() -> None:
    @nki.jit
    def k(out):
        t = nl.ndarray((1, 4), nl.int32, buffer=nl.sbuf)
        nisa.memset((1, 4), 0, nl.int32)
        t[0, 0] = nl.program_id(0)
        t[0, 1] = nl.program_id(1)
        t[0, 2] = nl.num_programs()
        t[0, 3] = nl.program_ndim() * 100 + nl.num_programs(axes=1)
        row = nl.program_id(0) * nl.num_programs(1) + nl.program_id(1)
        nl.store(out[row:row + 1, :], t)

    out = np.zeros((8, 4), np.int32)
    nki.simulate_kernel(k[2, 4], out)
    expected = [[i, j, 8, 204] for i in range(2) for j in range(4)]
    np.testing.assert_array_equal(out, expected)  # output argument written in place

    assert len(k[2, 4].run(np.zeros((8, 4), np.int32)).report.per_core_latency_ns) == 1
    for grid in (k[nl.nc(2) * 1, 4], k[nl.spmd_dim(1, nl.nc(2)), 4], k[1 * nl.nc(2), 4]):
        out2 = np.zeros((8, 4), np.int32)
        nki.simulate_kernel(grid, out2)
        np.testing.assert_array_equal(out2, expected)
        assert len(grid.report.per_core_latency_ns) == 2  # nl.nc(2): two NeuronCores run in parallel


def test_masked_tail_with_affine_indices() -> None:
    @nki.jit
    def k(a):
        n, m = a.shape
        out = nl.ndarray((n, m), a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:m]
        for i in nl.affine_range((n + 127) // 128):
            rows = i * 128 + i_p
            t = nl.load(a[rows, i_f], mask=(rows < n))
            nl.store(out[rows, i_f], nl.multiply(t, 2.0, mask=(rows < n)), mask=(rows < n))
        return out

    a = f32(300, 64)
    np.testing.assert_array_equal(k(a), a * 2)


def test_mgrid_attributes_and_strided_affine_index() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 256), a.dtype, buffer=nl.shared_hbm)
        ix = nl.mgrid[0:128, 0:256]
        t = nl.load(a[ix.p, 2 * ix.x + 1])  # odd columns
        nl.store(out[ix.p, ix.x], t)
        return out

    a = f32(128, 512)
    np.testing.assert_array_equal(k(a), a[:, 1::2])


def test_mask_combination_in_compute() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(128)[None, :]
        t = nl.load(a)
        z = nl.zeros((128, 128), a.dtype)
        z[i_p, i_f] = nl.exp(t, mask=((i_p >= i_f) & (i_f < 100)))
        nl.store(out, z)
        return out

    a = f32(128, 128)
    got = k(a)
    ii, jj = np.mgrid[0:128, 0:128]
    keep = (ii >= jj) & (jj < 100)
    np.testing.assert_allclose(got[keep], np.exp(a)[keep], rtol=1e-6)
    # the masked instruction writes z in place: masked-off elements keep z's zeros (no NaN sentinel leaks)
    np.testing.assert_array_equal(got[~keep], 0.0)


def test_block_dims_with_par_dim() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((4, nl.par_dim(128), 256), dtype=a.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(4):
            buf[b] = nl.load(a[b * 128:(b + 1) * 128, :])
        for b in nl.affine_range(4):
            nl.store(out[b * 128:(b + 1) * 128, :], buf[b] * 3.0)
        return out

    a = f32(512, 256)
    np.testing.assert_allclose(k(a), a * 3, rtol=1e-6)
    assert k.report.peak_sbuf_bytes_per_partition >= 4 * 256 * 4


def test_tile_operators() -> None:
    @nki.jit
    def k(a, b):
        out = nl.ndarray((6, 128, 64), nl.float32, buffer=nl.shared_hbm)
        x, y = nl.load(a), nl.load(b)
        acc = nl.zeros((128, 64), nl.float32)
        acc += x
        acc += y
        nl.store(out[0], acc)
        nl.store(out[1], x - y / 2.0)
        nl.store(out[2], (x > y) * 1.0)
        nl.store(out[3], 1.0 - x * y)
        xi = nl.static_cast(nl.abs(x) * 100.0, nl.int32)
        nl.store(out[4], nl.static_cast((xi << 2) >> 1, nl.float32))
        nl.store(out[5], nl.static_cast(nl.equal(xi, xi), nl.float32))
        return out

    a, b = f32(128, 64), f32(128, 64)
    got = k(a, b)
    np.testing.assert_allclose(got[0], a + b, rtol=1e-6)
    np.testing.assert_allclose(got[1], a - b / 2, rtol=1e-6)
    np.testing.assert_array_equal(got[2], (a > b).astype(np.float32))
    np.testing.assert_allclose(got[3], 1 - a * b, rtol=1e-5)
    xi = np.rint(np.abs(a) * 100).astype(np.int32)
    np.testing.assert_array_equal(got[4], ((xi << 2) >> 1).astype(np.float32))
    np.testing.assert_array_equal(got[5], 1.0)


def test_isa_calls_return_tiles_and_numpy_ops() -> None:
    @nki.jit
    def k(a, w):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((128, 2), nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        wt = nl.load(w)
        res = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
        res += nisa.nc_matmul(x, wt)           # x[K=128, M=128].T @ w[128, 128]
        y = nisa.tensor_scalar(res, np.multiply, 0.5, op1=np.add, operand1=1.0)
        mx = nisa.tensor_reduce(np.max, y, axis=[1], keepdims=True)
        sm = nisa.tensor_reduce(np.add, y, axis=1, keepdims=True)
        both = nisa.tensor_tensor(mx, sm, op=np.subtract)
        nl.store(out, y)
        nl.store(red[:, 0:1], mx)
        nl.store(red[:, 1:2], both)
        return out, red

    a, w = f32(128, 128), f32(128, 128)
    y, red = k(a, w)
    ref = (a.T @ w) * 0.5 + 1
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(red[:, 0], ref.max(axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(red[:, 1], ref.max(axis=1) - ref.sum(axis=1), rtol=1e-4, atol=1e-3)


def test_nl_matmul_both_layouts_and_transpose() -> None:
    @nki.jit
    def k(x, y):
        out = nl.ndarray((3, 128, 128), nl.float32, buffer=nl.shared_hbm)
        xt, yt = nl.load(x), nl.load(y)
        nl.store(out[0], nl.copy(nl.matmul(xt, yt)))
        nl.store(out[1], nl.copy(nl.matmul(xt, yt, transpose_x=True)))
        nl.store(out[2], nl.transpose(xt))
        return out

    x, y = f32(128, 128), f32(128, 128)
    got = k(x, y)
    np.testing.assert_allclose(got[0], x @ y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], x.T @ y, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[2], x.T)


def test_iota_affine_select_causal_mask() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((2, 128, 128), nl.float32, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(128)[None, :]
        t = nl.load(a)
        nl.store(out[0], nisa.affine_select(i_p >= i_f, t, -1e9))
        nl.store(out[1], nisa.iota(i_p * 128 + i_f, dtype=nl.float32))
        return out

    a = f32(128, 128)
    got = k(a)
    np.testing.assert_array_equal(got[0], np.where(np.tri(128, dtype=bool), a, np.float32(-1e9)))
    np.testing.assert_array_equal(got[1], np.arange(128 * 128, dtype=np.float32).reshape(128, 128))


def test_activation_with_bias_scale_and_reduce() -> None:
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        sums = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        x, bias = nl.load(a), nl.load(b)
        s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        y = nisa.activation_reduce(op=nl.tanh, data=x, reduce_op=np.add, reduce_res=s, bias=bias, scale=2.0)
        nl.store(out, y)
        nl.store(sums, s)
        return out, sums

    a, b = f32(128, 64), f32(128, 1)
    y, s = k(a, b)
    np.testing.assert_allclose(y, np.tanh(a * 2 + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s[:, 0], np.tanh(a * 2 + b).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_typing_annotations_and_benchmark_placeholders(tmp_path) -> None:
    @nki.benchmark(warmup=2, iters=5)
    def k(a: nt.tensor[[128, 512], nl.bfloat16]):
        out = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out

    a = RNG.standard_normal((128, 512), dtype=np.float32).astype(ml_dtypes.bfloat16)
    got = k(a)
    np.testing.assert_array_equal(got, np.exp(a.astype(np.float32)).astype(ml_dtypes.bfloat16))
    lat = k.benchmark_result.nc_latency
    assert lat.estimated and lat.get_latency_percentile(50) == lat.get_latency_percentile(99) > 0
    placeholder_out = k(nt.tensor[[128, 512], nl.bfloat16])  # values are ignored by benchmarks
    assert placeholder_out.shape == (128, 512) and k.benchmark_result.nc_latency.latency_us == lat.latency_us

    @nki.profile(working_directory=str(tmp_path), save_trace_name="exp.ntff")
    def p(a):
        out = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out

    p(a)
    summary = json.loads((tmp_path / "exp.json").read_text())
    assert summary["estimated"] is True and summary["latency_ns"] > 0 and summary["instructions"]["scalar"] == 1


def test_jit_modes() -> None:
    def body(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.sqrt(nl.load(a)))
        return out

    a = np.abs(f32(128, 32))
    for mode in ("auto", "simulation", "baremetal", "benchmark", "torchxla"):
        np.testing.assert_allclose(nki.jit(body, mode=mode)(a), np.sqrt(a), rtol=1e-6)
    with pytest.raises(nki.NkiError, match="jit mode"):
        nki.jit(body, mode="fast")


def test_device_print(capsys: pytest.CaptureFixture[str]) -> None:
    @nki.jit
    def k(a):
        t = nl.load(a)
        nl.device_print("tile=", t)

    k(np.arange(4, dtype=np.float32).reshape(2, 2))
    assert "tile=" in capsys.readouterr().out
    assert k.last_launch.prints[0][0] == "tile=" and k.last_launch.prints[0][1].tolist() == [[0, 1], [2, 3]]


def test_sub_kernel_and_trace() -> None:
    @nki.trace
    def double(t):
        return nl.add(t, t)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, double(nl.load(a)))
        return out

    a = f32(64, 64)
    np.testing.assert_array_equal(k(a), a + a)


def test_indirect_load_with_index_tile() -> None:
    @nki.jit
    def k(data, idx):
        out = nl.ndarray((128, 64), data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(64)[None, :]
        ids = nl.load(idx)
        rows = nl.load(data[ids[i_p, 0], i_f])      # gather one HBM row per partition
        nl.store(out, rows)
        return out

    data = f32(500, 64)
    idx = RNG.integers(0, 500, (128, 1)).astype(np.int32)
    np.testing.assert_array_equal(k(data, idx), data[idx[:, 0]])
    with pytest.raises(nki.NkiError, match="err_tensor_access_out_of_bound"):
        k(data, np.full((128, 1), 500, np.int32))


def test_list_of_input_arrays() -> None:
    @nki.jit
    def k(xs):
        out = nl.ndarray(xs[0].shape, xs[0].dtype, buffer=nl.shared_hbm)
        acc = nl.load(xs[0])
        for x in xs[1:]:
            acc = acc + nl.load(x)
        nl.store(out, acc)
        return out

    xs = [f32(8, 8) for _ in range(3)]
    np.testing.assert_allclose(k(xs), xs[0] + xs[1] + xs[2], rtol=1e-6)


def test_dense_mgrid_iota_and_where_on_a_predicate() -> None:
    @nki.jit
    def k(logits, n_valid):
        out = nl.ndarray((2, 128, 16), nl.float32, buffer=nl.shared_hbm)
        grid = nl.mgrid[0:128, 0:16]
        classes = nisa.iota(expr=grid.x, dtype=nl.int32)        # a full [128, 16] tile of column ids
        nl.store(out[0], nl.add(classes, 0.0, dtype=nl.float32))
        t = nl.load(logits)
        fill = nl.full((128, 16), -1.0, dtype=nl.float32, buffer=nl.sbuf)
        nl.store(out[1], nl.where(grid.p < n_valid, t, fill))   # rows past n_valid replaced
        return out

    x = f32(128, 16)
    got = k(x, 100)
    np.testing.assert_array_equal(got[0], np.broadcast_to(np.arange(16, dtype=np.float32), (128, 16)))
    np.testing.assert_array_equal(got[1][:100], x[:100])
    assert (got[1][100:] == -1).all()


def test_iota_over_a_4d_affine_expression() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((4, 2, 3, 5), nl.float32, buffer=nl.shared_hbm)
        w = nl.mgrid[0:4, 0:2, 0:3, 0:5]  # .p, .x, .y, .z
        idx = nisa.iota(3 * w.y + w.z, dtype=nl.float32)
        nl.store(out, idx)
        return out

    got = k(f32(1, 1))
    _, _, yy, zz = np.mgrid[0:4, 0:2, 0:3, 0:5]
    np.testing.assert_array_equal(got, 3 * yy + zz)


def test_profile_refuses_to_overwrite_by_default(tmp_path) -> None:
    def body(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    a = f32(4, 4)
    nki.profile(working_directory=str(tmp_path))(body)(a)
    with pytest.raises(nki.NkiError, match="overwrite=True"):
        nki.profile(working_directory=str(tmp_path))(body)(a)
    nki.profile(working_directory=str(tmp_path), overwrite=True)(body)(a)
    assert (tmp_path / "profile.json").exists()
