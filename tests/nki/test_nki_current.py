"""The current (`nki` >= 0.3) front end: simulate on NumPy and torch, kernel[lnc], dst-first ISA,
NkiTensor views and access patterns, registers and dynamic loops."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki, targets

from nki_test_utils import standard_normal_f32

f32 = standard_normal_f32(np.random.default_rng(3))


@nki.jit
def scale_kernel(x, factor):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    y = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=y)
    return out


def test_simulate_numpy_and_torch() -> None:
    torch = pytest.importorskip("torch")
    x = f32(64, 32)
    np.testing.assert_array_equal(nki.simulate(scale_kernel)(x, 2.0), x * 2)
    xt = torch.from_numpy(x).to(torch.bfloat16)
    got = nki.simulate(scale_kernel)(xt, 3.0)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    torch.testing.assert_close(got, xt * 3.0, rtol=0, atol=0)
    # calling a jitted kernel directly runs it on the simulator too
    np.testing.assert_array_equal(scale_kernel(x, 0.5), x * 0.5)


def test_inputs_written_in_place_numpy_and_torch() -> None:
    torch = pytest.importorskip("torch")

    @nki.jit
    def bump(x):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=x, src=t)

    x = f32(8, 8)
    before = x.copy()
    nki.simulate(bump)(x)
    np.testing.assert_array_equal(x, before + 1)
    xt = torch.zeros(8, 8)
    nki.simulate(bump)(xt)
    assert torch.equal(xt, torch.ones(8, 8))
    xs = f32(8, 16)[:, ::2]  # non-contiguous: copied in, copied back
    before = xs.copy()
    nki.simulate(bump)(xs)
    np.testing.assert_array_equal(xs, before + 1)


def test_a_copied_input_only_read_does_not_undo_writes_through_another_argument() -> None:
    torch = pytest.importorskip("torch")

    @nki.jit
    def double_into(src, dst):
        t = nl.ndarray(src.shape, src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=dst, src=t)

    # src (a transpose: copied in) and dst (written in place) are one buffer: the copy of src, which the
    # kernel only read, must not be written back over dst afterwards
    x = f32(8, 8)
    want = x.T * 2
    nki.simulate(double_into)(x.T, x)
    np.testing.assert_array_equal(x, want)
    xt = torch.from_numpy(f32(8, 8))
    want_t = xt.t() * 2
    nki.simulate(double_into)(xt.t(), xt)
    assert torch.equal(xt, want_t)
    # a copied input the kernel writes part of gets back only what it wrote
    y = f32(8, 16)
    before = y.copy()
    nki.simulate(double_into)(y[:, 8:].T, y[:, :8].T)
    np.testing.assert_array_equal(y[:, :8], before[:, 8:] * 2)
    np.testing.assert_array_equal(y[:, 8:], before[:, 8:])


def test_lnc_grid() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        half = x.shape[0] // nl.num_programs()
        r0 = nl.program_id(0) * half
        t = nl.ndarray((half, x.shape[1]), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r0:r0 + half, :])
        nisa.activation(dst=t, op=nl.exp, data=t)
        nisa.dma_copy(dst=out[r0:r0 + half, :], src=t)
        return out

    x = f32(256, 64)
    np.testing.assert_allclose(nki.simulate(k[2])(x), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(nki.simulate(k[1])(x[:128]), np.exp(x[:128]), rtol=1e-6)
    with pytest.raises(nki.NkiError, match="lnc 1 or 2"):
        k[8]
    with pytest.raises(nki.NkiError, match="lnc 1 or 2"):
        k[2, 2]


def test_views_and_access_patterns() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((7, 64, 32), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        w = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
        # permute/reshape on HBM: x.T of a [32, 64] view of the same bytes
        nisa.dma_copy(dst=w, src=x.reshape((32, 64)).permute(1, 0))
        nisa.dma_copy(dst=out[0], src=w)
        # slice with step + expand/broadcast: every other column, repeated
        nisa.dma_copy(dst=w, src=t.slice(1, 0, 32, 2).expand_dim(2).broadcast(2, 2).reshape((64, 32)))
        nisa.dma_copy(dst=out[1], src=w)
        # select one column, broadcast across the free dim
        nisa.dma_copy(dst=w, src=t.select(1, 5).expand_dim(1).broadcast(1, 32))
        nisa.dma_copy(dst=out[2], src=w)
        # raw access pattern: rows reversed in pairs via [[stride, count], ...] over the storage
        nisa.dma_copy(dst=w, src=x.ap([[32, 64], [1, 32]], offset=0))
        nisa.dma_copy(dst=out[3], src=w)
        nisa.dma_copy(dst=w, src=t.reshape_dim(1, (4, 8)).permute(0, 2, 1).flatten_dims(1, 2))
        nisa.dma_copy(dst=out[4], src=w)
        nisa.dma_copy(dst=w, src=t.rearrange("p (a b) -> p b a", a=4))
        nisa.dma_copy(dst=out[5], src=w)
        nisa.dma_copy(dst=w, src=t[nl.ds(0, 64), nl.ds(0, 32)].expand_dim(0).squeeze_dim(0))
        nisa.dma_copy(dst=out[6], src=w)
        return out

    x = f32(64, 32)
    got = k(x)
    np.testing.assert_array_equal(got[0], x.reshape(32, 64).T)
    np.testing.assert_array_equal(got[1], np.repeat(x[:, ::2], 2, axis=1))
    np.testing.assert_array_equal(got[2], np.repeat(x[:, 5:6], 32, axis=1))
    np.testing.assert_array_equal(got[3], x)
    np.testing.assert_array_equal(got[4], x.reshape(64, 4, 8).transpose(0, 2, 1).reshape(64, 32))
    np.testing.assert_array_equal(got[5], x.reshape(64, 4, 8).transpose(0, 2, 1).reshape(64, 32))
    np.testing.assert_array_equal(got[6], x)


def test_integer_indexing_rules() -> None:
    @nki.jit
    def k(x, v, c):
        t = nl.ndarray((64, 8, 32), nl.float32, buffer=nl.sbuf)
        assert t[:, 0, 10].shape == (64, 1)       # would drop below 2-D: the last integer is kept
        assert t[3].shape == (1, 8, 32)          # an integer on the partition dim keeps size 1
        assert t[:, 2].shape == (64, 32)         # an integer on a free dim disappears
        # HBM: integers drop, but a result of a >= 2-D tensor stays 2-D
        assert x[0].shape == (1, 32) and x[0:4, 3].shape == (4, 1) and x[1, 2].shape == (1, 1)
        assert c[1].shape == (4, 32) and c[1, 0:2].shape == (2, 32) and c[1, 0:2, 5].shape == (2, 1)
        assert v[3].shape == () and v[0:2].shape == (2,)     # a 1-D tensor indexes as NumPy does
        col = nl.load(x[0:4, 3])                  # a column loads as a column
        assert col.shape == (4, 1)
        out = nl.ndarray((4, 1), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, col)
        return out

    x = f32(4, 32)
    np.testing.assert_array_equal(nki.simulate(k)(x, f32(8), f32(3, 4, 32)), x[:, 3:4])


def test_vector_offset_gather() -> None:
    @nki.jit
    def k(table, idx):
        out = nl.ndarray((4, 16), nl.float32, buffer=nl.shared_hbm)
        ids = nl.ndarray((4, 1), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ids, src=idx)
        rows = nl.ndarray((4, 16), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=table.ap([[16, 4], [1, 16]], vector_offset=ids, indirect_dim=0))
        nisa.dma_copy(dst=out, src=rows)
        return out

    table = f32(10, 16)
    idx = np.array([[7], [0], [3], [7]], np.int32)
    np.testing.assert_array_equal(k(table, idx), table[[7, 0, 3, 7]])
    with pytest.raises(nki.NkiError, match="err_tensor_access_out_of_bound"):
        k(table, np.array([[7], [10], [3], [7]], np.int32))


def test_registers_fori_loop_and_while_loop() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, x.shape[1]), x.dtype, buffer=nl.sbuf)

        def body(i):
            nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
            nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)

        nl.fori_loop(0, x.shape[0] // 128, body)

        counter = nisa.register_alloc(3)
        cnt = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=cnt, value=0)

        def step():
            nisa.tensor_scalar(dst=cnt, data=cnt, op0=nl.add, operand0=1)
            nisa.register_move(counter, counter - 1)
            return counter

        nl.while_loop(counter, step)
        loaded = nisa.register_alloc()
        nisa.register_load(loaded, cnt)
        assert int(loaded) == 3
        stored = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.register_store(stored, loaded)
        return out

    x = f32(384, 16)
    np.testing.assert_array_equal(k(x), x * 2)


def test_nki_tensor_has_no_arithmetic_operators() -> None:
    @nki.jit
    def k(x):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        return t + t

    with pytest.raises(nki.NkiError, match="nl.add"):
        k(f32(4, 4))


def test_jit_platform_target_refused_and_target_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(nki.NkiError, match="NEURON_PLATFORM_TARGET_OVERRIDE"):
        nki.jit(platform_target="trn2")(lambda x: x)

    @nki.jit
    def k(x):
        assert nl.is_hbm(x) and not nl.is_on_chip(x.buffer)
        t = nl.ndarray((2, 2), nl.float32, buffer=nl.psum)
        assert nl.is_psum(t) and nl.is_on_chip(t) and not nl.is_sbuf(t)
        return int(nisa.get_nc_version())

    assert nki.simulate(k)(f32(2, 2)) == 3
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4")
    assert nki.simulate(k)(f32(2, 2)) == 4
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "")
    # without the override: the process's target (TORCHNEURON_TARGET, read once; on nrt the instance's)
    monkeypatch.setattr(targets, "current", lambda: targets.named("trn1"))
    assert nki.simulate(k)(f32(2, 2)) == 2


def test_more_isa_ops() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((6, 4, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 16), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray((4, 16), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=r, data0=t, data1=t, initial=0.0, op0=nl.multiply, op1=nl.add)
        nisa.dma_copy(dst=out[0], src=r)
        nisa.iota(dst=r, pattern=[[1, 16]], offset=5, channel_multiplier=100)
        nisa.dma_copy(dst=out[1], src=r)
        m8 = nl.ndarray((4, 8), nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=m8, src=t)
        idx = nl.ndarray((4, 8), nl.uint32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=idx, data=t, vals=m8)
        both = nl.ndarray((4, 16), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=both, value=0.0)
        nisa.tensor_copy(dst=both[:, 0:8], src=m8)
        nisa.tensor_copy(dst=both[:, 8:16], src=idx)
        nisa.dma_copy(dst=out[2], src=both)
        pred = nl.ndarray((4, 16), nl.uint8, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=pred, data=t, op0=nl.greater, operand0=0.0)
        nisa.memset(dst=r, value=-1.0)
        nisa.tensor_copy_predicated(dst=r, src=t, predicate=pred)
        nisa.dma_copy(dst=out[3], src=r)
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.multiply, op1=nl.add, imm0=2.0)
        nisa.dma_copy(dst=out[4], src=r)
        zeros = nl.ndarray((4, 16), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=zeros, value=0.0)
        row_max = nl.ndarray((4, 1), nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=r, predicate=pred, on_true=t, on_false=zeros, reduce_res=row_max)
        nisa.tensor_copy(dst=r[:, 0:1], src=row_max)
        nisa.dma_copy(dst=out[5], src=r)
        return out

    x = f32(4, 16)
    got = k(x)
    scan = np.zeros(4, np.float32)
    ref = np.empty_like(x)
    for i in range(16):
        scan = x[:, i] * scan + x[:, i]
        ref[:, i] = scan
    np.testing.assert_allclose(got[0], ref, rtol=1e-5)
    np.testing.assert_array_equal(got[1], 5 + np.arange(4)[:, None] * 100 + np.arange(16)[None, :])
    top = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(got[2][:, :8], top)
    np.testing.assert_array_equal(got[2][:, 8:], np.argsort(-x, axis=1, kind="stable")[:, :8])
    np.testing.assert_array_equal(got[3], np.where(x > 0, x, -1))
    np.testing.assert_allclose(got[4], np.cumsum(x * 2, axis=1), rtol=1e-5, atol=1e-6)
    selected = np.where(x > 0, x, 0)
    np.testing.assert_array_equal(got[5][:, 1:], selected[:, 1:])
    np.testing.assert_array_equal(got[5][:, 0], selected.max(axis=1))


def test_bf16_storage_is_ml_dtypes() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)  # fp32 -> bf16 on the DMA: round to nearest even
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.array([[1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8]], np.float32)
    got = k(x)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [[1.0, 1.0 + 2.0 ** -6]])


def test_activation_reduce_registers() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 4), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        junk = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        res = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=junk, op=nl.copy, data=t, reduce_op=nl.add, reduce_res=res[:, 0:1])  # this row only
        nisa.activation(dst=junk, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(dst=junk, op=nl.square, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce,
                        reduce_res=res[:, 1:2])  # sum(x) + sum(x^2) accumulated in the registers
        nisa.activation(dst=junk, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.load_reduce,
                        reduce_res=res[:, 0:1])  # starts from res[:, 0] = sum(x)
        nisa.activation(dst=junk, op=nl.copy, data=t, reduce_cmd=nisa.reduce_cmd.reset)
        nisa.activation(dst=junk, op=nl.copy, data=t, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce,
                        reduce_res=res[:, 2:3])
        nisa.memset(dst=res[:, 3:4], value=0.0)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = np.random.default_rng(5).standard_normal((128, 64), dtype=np.float32)
    got = k(x)
    s, s2 = x.sum(axis=1), (x * x).sum(axis=1)
    np.testing.assert_allclose(got[:, 0], 2 * s, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[:, 1], s + s2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[:, 2], s, rtol=1e-4, atol=1e-4)


def test_dma_compute_and_n_gather() -> None:
    @nki.jit
    def k(a, b, idx):
        out = nl.ndarray((2, 4, 8), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(dst=out[0], srcs=[a, b], reduce_op=nl.add, scales=[2.0, -1.0])
        t = nl.ndarray((4, 8), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        ids = nl.ndarray((4, 8), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ids, src=idx)
        g = nl.ndarray((4, 8), nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=g, data=t, indices=ids)
        nisa.dma_copy(dst=out[1], src=g)
        return out

    a, b = f32(4, 8), f32(4, 8)
    idx = np.random.default_rng(1).integers(0, 8, (4, 8)).astype(np.int32)
    got = k(a, b, idx)
    np.testing.assert_allclose(got[0], 2 * a - b, rtol=1e-6)
    np.testing.assert_array_equal(got[1], np.take_along_axis(a, idx, axis=1))


def test_lnc2_sendrecv_and_core_barrier() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        rows = x.shape[0] // 2
        mine = nl.ndarray((rows, x.shape[1]), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine, src=x[me * rows:(me + 1) * rows, :])
        theirs = nl.ndarray((rows, x.shape[1]), x.dtype, buffer=nl.sbuf)
        peer = 1 - me
        nisa.sendrecv(src=mine, dst=theirs, send_to_rank=peer, recv_from_rank=peer, pipe_id=0)
        nisa.core_barrier(data=theirs, cores=(0, 1))
        nisa.dma_copy(dst=out[me * rows:(me + 1) * rows, :], src=theirs)  # each core writes the other's half
        return out

    x = f32(256, 32)
    got = nki.simulate(k[2])(x)
    np.testing.assert_array_equal(got, np.concatenate([x[128:], x[:128]]))


def test_lnc2_failure_on_one_core_does_not_hang() -> None:
    @nki.jit
    def k(x):
        t = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
        if nl.program_id(0) == 1:
            nl.ndarray((256, 4), nl.float32, buffer=nl.sbuf)  # core 1 fails before the barrier
        nisa.core_barrier(data=t, cores=(0, 1))

    with pytest.raises(nki.NkiError, match="err_num_partition_exceed_arch_limit"):
        nki.simulate(k[2])(f32(2, 2))
    with pytest.raises(nki.NkiError, match="kernel\\[2\\]"):
        nki.simulate(k[1])(f32(2, 2))


def test_matmul_double_row_fp8_and_pe_tiling() -> None:
    f8 = ml_dtypes.float8_e4m3fn

    @nki.jit
    def k(s, m):
        out = nl.ndarray((64, 256), nl.float32, buffer=nl.shared_hbm)
        st = nl.ndarray((128, 2, 64), nl.float8_e4m3fn, buffer=nl.sbuf)
        mv = nl.ndarray((128, 2, 256), nl.float8_e4m3fn, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=s)
        nisa.dma_copy(dst=mv, src=m)
        acc = nl.ndarray((64, 256), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=st, moving=mv, perf_mode=nisa.matmul_perf_mode.double_row)
        small = nl.ndarray((64, 256), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=small, stationary=st[0:64, 0, :], moving=mv[0:64, 0, :], tile_position=(64, 0),
                       tile_size=(64, 64))
        small_sb = nl.ndarray((64, 256), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=small_sb, src=small)
        res = nl.ndarray((64, 256), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=acc, data2=small_sb, op=nl.subtract)
        nisa.dma_copy(dst=out, src=res)
        return out

    rng = np.random.default_rng(4)
    s = rng.uniform(-2, 2, (128, 2, 64)).astype(f8)
    m = rng.uniform(-2, 2, (128, 2, 256)).astype(f8)
    sf, mf = s.astype(np.float32), m.astype(np.float32)
    want = sf[:, 0].T @ mf[:, 0] + sf[:, 1].T @ mf[:, 1] - sf[:64, 0].T @ mf[:64, 0]
    np.testing.assert_allclose(nki.simulate(k)(s, m), want, rtol=1e-4, atol=1e-3)
    report = nki.estimate(k, s, m)
    # one full-array pass (256 moving columns) plus a quarter-array pass
    assert report.engine_busy_ns["tensor"] == pytest.approx((256 + 256 / 4) / 2.4)

    @nki.jit
    def bad(s):
        st = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=st, value=0.0)
        acc = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=st, moving=st, tile_size=(64, 64))

    with pytest.raises(nki.NkiError, match="contracts 128 rows"):
        nki.simulate(bad)(s)


def test_stream_shuffle_within_quadrants() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((64, 4), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 4), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray((64, 4), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=r, value=-1.0)
        nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=[31 - i if i % 4 else 255 for i in range(32)])
        nisa.dma_copy(dst=out, src=r)
        return out

    x = f32(64, 4)
    got = k(x)
    for p in range(64):
        j = p % 32
        want = -1.0 if j % 4 == 0 else x[(p // 32) * 32 + 31 - j]
        np.testing.assert_array_equal(got[p], want)


def test_tensor_copy_on_the_scalar_engine_needs_neuroncore_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    """AWS documents the current tensor_copy as Vector/GpSimd only on NeuronCore-v2 (trn1): the Scalar engine
    copies there with activation(op=copy); trn2 copies on any of the three."""
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        y = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=y, src=t, engine=nisa.scalar_engine)
        nisa.dma_copy(dst=out, src=y)
        return out

    x = f32(8, 16)
    np.testing.assert_array_equal(nki.simulate(k)(x), x)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    with pytest.raises(nki.NkiError, match=r"tensor_copy.*Scalar engine.*NeuronCore-v2.*\n?.*activation"):
        nki.simulate(k)(x)
