"""Behaviours public NKI code relies on, each of which the simulator once got silently wrong (or refused):
written as kernel authors write them (the style of AWS's tutorials and ISA examples), checked against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.compiler as ncc
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl
from torchneuron.nki import runner

from nki_test_utils import standard_normal_f32

RNG = np.random.default_rng(17)
f32 = standard_normal_f32(RNG)


# ---- PSUM accumulation into a freshly allocated tile ----

@nki.jit
def matmul_accumulate_into_ndarray(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    res_psum = nl.ndarray((M, N), nl.float32, buffer=nl.psum)  # uninitialised, as in the tutorials
    for k in nl.affine_range(K // 128):
        lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, :])
        rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, :])
        res_psum += nisa.nc_matmul(lhsT_tile, rhs_tile)
    nl.store(result, value=nl.copy(res_psum))
    return result


@nki.jit
def nl_matmul_accumulate_into_ndarray(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    res_psum = nl.ndarray((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        res_psum += nl.matmul(nl.load(lhsT[k * 128:(k + 1) * 128, :]), nl.load(rhs[k * 128:(k + 1) * 128, :]),
                              transpose_x=True)
    nl.store(result, value=nl.copy(res_psum))
    return result


@pytest.mark.parametrize("kernel", [matmul_accumulate_into_ndarray, nl_matmul_accumulate_into_ndarray])
def test_psum_accumulation_into_uninitialised_psum(kernel) -> None:
    lhsT, rhs = f32(384, 64), f32(384, 256)
    got = kernel(lhsT, rhs)
    assert not np.isnan(got).any()  # the first matmul of the group overwrites; the NaN sentinel never leaks
    np.testing.assert_allclose(got, lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


# ---- a masked result assigned into a view ----

def test_masked_result_assigned_into_a_view_keeps_the_other_elements() -> None:
    @nki.jit
    def k(a, b):
        out = nl.ndarray(b.shape, b.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:64]
        dst = nl.load(b)
        x = nl.load(a)
        dst[i_p, i_f] = nisa.activation(op=nl.exp, data=x[i_p, i_f], mask=(i_f < 40))
        dst[i_p, 64 + i_f] = nl.add(x[i_p, i_f], 1.0, mask=(i_p < 100))
        nl.store(out, dst)
        return out

    a, b = f32(128, 64), f32(128, 128)
    got = k(a, b)
    want = b.copy()
    want[:, :40] = np.exp(a[:, :40])
    want[:100, 64:] = a[:100] + 1.0
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ---- SPMD grids sharded over NeuronCores ----

def test_spmd_dim_launches_the_product_with_aws_core_placement() -> None:
    @nki.jit
    def spmd_copy(a):
        b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        nl.store(b[i, j], nl.load(a[i, j]))
        return b

    src = RNG.random((4, 2, 1, 1), dtype=np.float32)
    for grid in (spmd_copy[4, 2], spmd_copy[nl.spmd_dim(nl.nc(2), 2), 2], spmd_copy[nl.nc(2) * 2, 2],
                 spmd_copy[nl.spmd_dim(2, nl.nc(2)), 2], spmd_copy[2 * nl.nc(2), 2]):
        np.testing.assert_array_equal(grid(src), src)  # all 8 programs ran: every element copied
    # AWS's documented placement: nc(2) first keeps consecutive ids on a core, nc(2) second alternates
    blocked = runner.grid_programs(spmd_copy[nl.spmd_dim(nl.nc(2), 2), 2].grid)
    assert [c for (i, j), c in blocked if j == 0] == [0, 0, 1, 1]
    alternating = runner.grid_programs(spmd_copy[nl.spmd_dim(2, nl.nc(2)), 2].grid)
    assert [c for (i, j), c in alternating if j == 0] == [0, 1, 0, 1]
    assert len(spmd_copy[nl.spmd_dim(2, nl.nc(2)), 2].run(src).report.per_core_latency_ns) == 2


# ---- keyword arguments of legacy ISA calls ----

def test_select_reduce_writes_dst_and_masks_are_applied() -> None:
    @nki.jit
    def k(a, p):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        top = nl.ndarray((128, 8), nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        x, pred = nl.load(a), nl.load(p)
        dst = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=dst, predicate=pred, on_true=x, on_false=-1.0, reduce_res=r, reduce_op=nl.maximum)
        nl.store(out, dst)
        nl.store(red, r)
        i_p, i_f = nl.mgrid[0:128, 0:64]
        nl.store(top, nisa.max8(src=x, mask=(i_f >= 32)))  # only the upper half are candidates
        return out, top, red

    a, p = f32(128, 64), (RNG.random((128, 64)) > 0.5).astype(np.float32)
    out, top, red = k(a, p)
    sel = np.where(p != 0, a, -1.0)
    np.testing.assert_array_equal(out, sel)
    np.testing.assert_array_equal(red[:, 0], sel.max(axis=1))
    np.testing.assert_array_equal(top, -np.sort(-a[:, 32:], axis=1)[:, :8])


@pytest.mark.parametrize("call", [
    lambda t: nisa.max8(src=t, maks=None),
    lambda t: nisa.tensor_copy(t, enigne=nisa.vector_engine),
    lambda t: nisa.activation(op=nl.exp, data=t, bais=None),
    lambda t: nl.exp(t, msk=None),
    lambda t: nl.zeros((128, 8), nl.float32, bufer=nl.sbuf),
])
def test_unknown_keyword_arguments_are_errors(call) -> None:
    @nki.jit
    def k(a):
        call(nl.load(a))

    with pytest.raises(TypeError, match="unexpected keyword"):
        k(f32(128, 64))


# ---- indexing HBM with a slice then an integer ----

def test_slice_then_integer_loads_a_column() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 1), a.dtype, buffer=nl.shared_hbm)
        col = nl.load(a[0:128, 5])
        assert col.shape == (128, 1)
        nl.store(out, col)
        return out

    a = f32(128, 16)
    np.testing.assert_array_equal(k(a), a[:, 5:6])


# ---- host-side dtype helpers and tile methods ----

def test_static_cast_on_host_arrays() -> None:
    x = np.array([1.0, 1.00390625, 3e38, -2.5], np.float32)
    got = nl.static_cast(x, nl.bfloat16)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(nl.static_cast(np.array([2.5, 3.5, 1e10, -7.0]), nl.int8), [2, 4, 127, -7])


def test_reshape_with_the_shape_keyword() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a.reshape(shape=(128, 64)))
        nl.store(out, t.reshape(shape=(128, 64)))
        return out

    a = f32(64, 128)
    np.testing.assert_array_equal(k(a), a.reshape(128, 64))


# ---- on-chip capacity as the allocator lays tiles out ----

def test_a_tile_rebound_in_a_loop_does_not_overlap_its_successor() -> None:
    @nki.jit
    def k(a):  # 120 KiB per partition each: two at once would not fit trn2's 208 KiB
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(a.shape[0] // 128):
            t = nl.ndarray((128, a.shape[1]), a.dtype, buffer=nl.sbuf)
            t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], t)
        return out

    a = f32(384, 30720)
    np.testing.assert_array_equal(k(a), a)


def test_block_tensors_and_mod_alloc_are_charged_by_layout() -> None:
    @nki.jit
    def k(a):  # 8 blocks of 32 KiB per partition: 256 KiB in full, more than trn2 has
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        blocks = nl.ndarray((8, nl.par_dim(128), 8192), a.dtype, buffer=nl.sbuf)
        mod = nl.ndarray((8, nl.par_dim(128), 8192), a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0,
                                                                                      num_free_tiles=(2,)))
        for i in nl.affine_range(8):
            blocks[i] = nl.load(a[i])
            mod[i] = nl.exp(blocks[i])
            nl.store(out[i], mod[i])
        return out

    a = f32(8, 128, 8192)
    np.testing.assert_allclose(k(a), np.exp(a), rtol=1e-6)
    report = k.report
    assert report.peak_sbuf_bytes_per_partition < 212984


# ---- legacy transposes ----

def test_nc_transpose_placement_and_use_as_a_matmul_operand() -> None:
    @nki.jit
    def k(a, b):
        out = nl.ndarray((64, 512), nl.float32, buffer=nl.shared_hbm)
        small = nl.ndarray((16, 32), nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)                          # (128, 64)
        xt = nisa.nc_transpose(x)               # Tensor engine: (64, 128) in PSUM
        assert xt.buffer == nl.psum and xt.shape == (64, 128)
        back = nisa.nc_transpose(xt)            # a PSUM tile too big for Vector goes through SBUF
        res = nisa.nc_matmul(back, nl.load(b))  # a transposed (PSUM) tile as a matmul operand
        nl.store(out, nl.copy(res))
        v = nisa.nc_transpose(nl.load(a[0:32, 0:16]), engine=nisa.vector_engine)
        assert v.buffer == nl.sbuf             # the Vector engine writes SBUF
        nl.store(small, v)
        return out, small

    a, b = f32(128, 64), f32(128, 512)
    out, small = k(a, b)
    np.testing.assert_allclose(out, a.T @ b, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(small, a[:32, :16].T)


def test_legacy_cumulative_dma_transpose_constants_and_perf_mode() -> None:
    import torchneuron.nki.legacy.isa.constants as constants

    assert constants.oob_mode.skip is nisa.oob_mode.skip and constants.engine.tensor is nisa.tensor_engine

    @nki.jit
    def k(a, b):
        cum = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        tr = nl.ndarray((64, 128), nl.float32, buffer=nl.shared_hbm)
        mm = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        nl.store(cum, nisa.tensor_scalar_cumulative(x, op0=nl.multiply, op1=nl.add, imm0=2.0, imm1=1.0,
                                                    reduce_cmd=nisa.reduce_cmd.load_reduce))
        nl.store(tr, nisa.dma_transpose(a))
        res = nisa.nc_matmul(nl.load(b), x, perf_mode=nisa.matmul_perf_mode.none)
        nl.store(mm, nl.copy(res))
        return cum, tr, mm

    a, b = f32(128, 64), f32(128, 128)
    cum, tr, mm = k(a, b)
    np.testing.assert_allclose(cum, 1.0 + np.cumsum(2 * a, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(tr, a.T)
    np.testing.assert_allclose(mm, b.T @ a, rtol=1e-4, atol=1e-3)

    @nki.jit
    def bad(b):
        nisa.nc_matmul(nl.load(b), nl.load(b), perf_mode="turbo")

    with pytest.raises(nki.NkiError, match="perf_mode"):
        bad(b)


# ---- legacy outputs and errors ----

def test_legacy_outputs_in_hbm() -> None:
    @nki.jit
    def transpose_tiles(a_tensor):
        M, N = a_tensor.shape
        out = nl.ndarray((N, M), dtype=a_tensor.dtype, buffer=nl.hbm)  # NKI 0.1: nl.hbm outputs are legal
        for m in nl.affine_range(M // 128):
            for n in nl.affine_range(N // 128):
                a_tile = nl.ndarray((128, 128), dtype=a_tensor.dtype, buffer=nl.sbuf)
                nisa.dma_copy(src=a_tensor[m * 128:(m + 1) * 128, n * 128:(n + 1) * 128], dst=a_tile)
                transposed = nisa.tensor_copy(src=nisa.nc_transpose(a_tile))
                nisa.dma_copy(src=transposed, dst=out[n * 128:(n + 1) * 128, m * 128:(m + 1) * 128])
        return out

    a = f32(256, 384)
    np.testing.assert_array_equal(transpose_tiles(a), a.T)
    np.testing.assert_array_equal(transpose_tiles[2](a), a.T)  # one output for the whole grid


def test_out_of_bounds_indirect_dma_is_an_index_error() -> None:
    @nki.jit
    def indirect_load(in_tensor):
        out_tensor = nl.ndarray([64, 512], dtype=in_tensor.dtype, buffer=nl.shared_hbm)
        n, m = in_tensor.shape
        ix, iy = nl.mgrid[0:n // 2, 0:m]
        idx_tile = nisa.iota(3 * nl.arange(n // 2)[:, None], dtype=np.int32)  # rows 0, 3, ..., 189
        out_tile = nisa.memset(shape=(n // 2, m), value=-1, dtype=in_tensor.dtype)
        nisa.dma_copy(src=in_tensor[idx_tile, iy], dst=out_tile[ix, iy], oob_mode=nisa.oob_mode.error)
        nl.store(out_tensor, value=out_tile)
        return out_tensor

    with pytest.raises(IndexError) as info:
        indirect_load(f32(128, 512))
    assert str(info.value) == "index 66048 is out of bounds for axis 0 with size 65536"  # AWS's text
    assert info.value.code == "err_tensor_access_out_of_bound"


def test_jax_arrays_are_kernel_inputs() -> None:
    jnp = pytest.importorskip("jax.numpy")

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    a, b = f32(128, 64), f32(128, 64)
    got = add(jnp.asarray(a), jnp.asarray(b))
    assert type(got).__module__.startswith("jax")
    np.testing.assert_array_equal(np.asarray(got), a + b)
