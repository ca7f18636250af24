"""Every hardware rule the simulator checks, broken by a minimal kernel: the documented error name, and the
kernel's own file and line."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
import torchneuron.nki.legacy as lnki
import torchneuron.nki.legacy.isa as lisa
import torchneuron.nki.legacy.language as lnl
from torchneuron import nki
from torchneuron.nki import NkiError

from nki_test_utils import expect_error, line_of

F32 = np.float32
A = np.ones((128, 512), F32)


def test_partitions_over_128() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((256, 4), nl.float32, buffer=nl.sbuf)  # BAD
        return t
    err = expect_error("err_num_partition_exceed_arch_limit", nki.simulate(k), A)
    assert "number of partitions 256 exceed architecture limitation of 128" in str(err)


def test_load_of_more_than_128_partitions() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)  # BAD
        return t
    expect_error("err_num_partition_exceed_arch_limit", k, np.ones((256, 4), F32))


def test_out_of_bound_slice() -> None:
    @lnki.jit
    def k(a):
        out = lnl.ndarray((128, 4096), lnl.float32, buffer=lnl.shared_hbm)
        t = lnl.load(a[:, 0:4096])  # BAD
        lnl.store(out, t)
        return out
    err = expect_error("err_tensor_access_out_of_bound", k, np.ones((128, 4000), F32))
    assert "index range [0, 4095] exceed dimension size of 4000" in str(err)


def test_out_of_bound_arange_without_mask_and_fine_with_mask() -> None:
    def body(a, masked):
        out = lnl.ndarray((128, 512), lnl.float32, buffer=lnl.shared_hbm)
        i_p, i_f = lnl.mgrid[0:128, 0:512]
        t = lnl.load(a[i_p + 100, i_f], mask=(i_p + 100 < 200) if masked else None)  # BAD
        lnl.store(out, t)
        return out

    @lnki.jit
    def k(a):
        return body(a, False)

    err = expect_error("err_tensor_access_out_of_bound", lnki.jit(body), np.ones((200, 512), F32), False)
    assert "dimension 0" in str(err)
    out = lnki.simulate_kernel(body, np.arange(200 * 512, dtype=F32).reshape(200, 512), True)
    np.testing.assert_array_equal(out[:100], np.arange(200 * 512, dtype=F32).reshape(200, 512)[100:])
    assert np.isnan(out[100:]).all()  # masked-off rows were never loaded: the NaN sentinel is stored
    del k


def test_load_from_sbuf_is_unsupported_memory() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        u = lnl.load(t)  # BAD
        return u
    err = expect_error("err_unsupported_memory", k, A)
    assert "Expected operand 'src' of 'load' to be in address space 'hbm', but got a tile in 'sbuf'" in str(err)


def test_matmul_dst_must_be_psum() -> None:
    @nki.jit
    def k(a):
        s = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=a[:, 0:128])
        d = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.nc_matmul(dst=d, stationary=s, moving=s)  # BAD
        return d
    expect_error("err_unsupported_memory", nki.simulate(k), A)


def test_compute_on_hbm_operand() -> None:
    @lnki.jit
    def k(a):
        t = lnl.exp(a)  # BAD
        return t
    expect_error("err_unsupported_memory", k, A)


def test_output_must_be_shared_hbm() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        return t  # BAD
    err = expect_error("err_unsupported_memory", nki.simulate(k), A)
    assert "shared_hbm" in str(err)


def test_output_not_written() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
        return out  # BAD
    expect_error("err_tensor_output_not_written_to", nki.simulate(k), A)


def test_partially_written_output_warns() -> None:
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[0:64, :])
        nisa.dma_copy(dst=out[0:64, :], src=t)
        return out
    with pytest.warns(nki.NkiWarning, match="32768 of 65536 elements never written"):
        nki.simulate(k)(A)


def test_matmul_moving_free_size_limit() -> None:
    @nki.jit
    def k(a):
        s = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, 1024), nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=0.0)
        nisa.memset(dst=m, value=0.0)
        d = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=d, stationary=s, moving=m)  # BAD
        return d
    err = expect_error("err_size_of_dimension_exceed_arch_limit", nki.simulate(k), A)
    assert "moving free size 1024" in str(err)


def test_matmul_stationary_free_size_limit() -> None:
    @lnki.jit
    def k(a):
        s = lnl.zeros((128, 256), lnl.bfloat16)
        r = lisa.nc_matmul(s, s)  # BAD
        return r
    expect_error("err_size_of_dimension_exceed_arch_limit", k, A)


def test_matmul_contraction_mismatch() -> None:
    @lnki.jit
    def k(a):
        s = lnl.zeros((128, 128), lnl.bfloat16)
        m = lnl.zeros((64, 512), lnl.bfloat16)
        r = lisa.nc_matmul(s, m)  # BAD
        return r
    expect_error("err_num_partition_mismatch", k, A)


def test_matmul_fp32_with_bf16() -> None:
    @lnki.jit
    def k(a):
        s = lnl.zeros((128, 128), lnl.float32)
        m = lnl.zeros((128, 512), lnl.bfloat16)
        r = lisa.nc_matmul(s, m)  # BAD
        return r
    expect_error("err_unsupported_dtype", k, A)


def test_transpose_too_large() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        r = lisa.nc_transpose(t)  # BAD
        return r
    expect_error("err_size_of_dimension_exceed_arch_limit", k, A)


def test_1d_arange() -> None:
    @lnki.jit
    def k(a):
        i = lnl.arange(128)
        t = lnl.load(a[i, i])  # BAD
        return t
    expect_error("err_1d_arange_not_supported", k, A)


def test_mixing_basic_and_advanced_indexing() -> None:
    @lnki.jit
    def k(a):
        i_p = lnl.arange(128)[:, None]
        t = lnl.load(a[i_p, 0:512])  # BAD
        return t
    expect_error("err_unsupported_mixing_basic_advanced_tensor_indexing", k, A)


def test_store_destination_smaller() -> None:
    @lnki.jit
    def k(a):
        out = lnl.ndarray((128, 256), lnl.float32, buffer=lnl.shared_hbm)
        t = lnl.load(a)
        lnl.store(out, t)  # BAD
        return out
    expect_error("err_store_dst_shape_smaller_than_other_shape", k, A)


def test_activation_bias_dtype() -> None:
    """An integer bias is refused (a bf16/fp16 one is accepted: test_nki_accepted_code)."""
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        b = lnl.zeros((128, 1), lnl.int32)
        r = lisa.activation(lnl.exp, t, bias=b)  # BAD
        return r
    expect_error("err_activation_bias_invalid_type", k, A)


def test_activation_scale_type_and_shape() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        r = lisa.activation(lnl.exp, t, scale="2")  # BAD
        return r
    expect_error("err_activation_scale_invalid_type", k, A)

    @lnki.jit
    def k2(a):
        t = lnl.load(a)
        r = lisa.activation(lnl.exp, t, scale=t)  # BAD
        return r
    expect_error("err_activation_scale_scalar_or_vector", k2, A)


def test_truth_value_of_tile() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        if t:  # BAD
            pass
    expect_error("err_ambiguous_tensor_truth_value", k, A)


def test_control_flow_on_arange() -> None:
    @lnki.jit
    def k(a):
        i_p = lnl.arange(128)[:, None]
        if i_p < 64:  # BAD
            pass
    expect_error("err_control_flow_condition_depending_on_arange", k, A)


def test_annotation_shape_mismatch() -> None:
    @lnki.jit
    def k(a: lnki.typing.tensor[64, 512]):  # BAD
        return None
    expect_error("err_annotation_shape_mismatch", k, A)


def test_hbm_tensor_with_init_value() -> None:
    @lnki.jit
    def k(a):
        out = lnl.zeros((128, 512), lnl.float32, buffer=lnl.shared_hbm)  # BAD
        return out
    expect_error("err_hbm_tensor_with_init_value_not_supported", k, A)


def test_nested_kernel_with_grid() -> None:
    @lnki.jit
    def inner(a):
        return None

    @lnki.jit
    def k(a):
        inner[2](a)  # BAD
    expect_error("err_nested_kernel_with_spmd_grid", k, A)


def test_api_outside_kernel() -> None:
    with pytest.raises(NkiError) as info:
        nl.zeros((128, 1), nl.float32)
    assert info.value.code == "err_nki_api_outside_of_nki_kernel"
    assert info.value.filename == __file__


def test_start_partition_rule() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        ok = nl.ndarray((32, 512), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=ok, src=t[96:128, :])
        nisa.tensor_copy(dst=ok, src=t[16:48, :])  # BAD
        return ok
    err = expect_error("err_unsupported_start_partition", nki.simulate(k), A)
    assert "starting at partition 16" in str(err)


def test_non_contiguous_partitions() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        d = nl.ndarray((64, 512), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=d, src=t[0:128:2, :])  # BAD
        return d
    expect_error("err_leading_dimension_of_tensor_must_be_partition", nki.simulate(k), A)


def test_reduce_over_partition_axis() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        r = lnl.sum(t, axis=0)  # BAD
        return r
    expect_error("err_unsupported_reduce_axis", k, A)

    @lnki.jit
    def k2(a):
        t = lnl.load(a.reshape((128, 2, 2, 128)))
        # one instruction takes consecutive axes ending at the last one or (legacy) starting at 1; nl.sum permutes
        r = lisa.tensor_reduce(np.add, t, axis=2)  # BAD
        return r
    expect_error("err_unsupported_reduce_axis", k2, A)


def test_too_many_dimensions() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a.reshape((128, 2, 2, 2, 2, 32)))
        r = lnl.exp(t)  # BAD
        return r
    expect_error("err_exceed_max_supported_dimension", k, A)


def test_float64_input() -> None:
    @lnki.jit
    def k(a):
        return None
    with pytest.raises(NkiError, match="float64"):
        k(np.ones((4, 4)))


def test_sbuf_capacity_per_target(monkeypatch: pytest.MonkeyPatch) -> None:
    @nki.jit
    def k(a):
        keep = []
        for _ in range(50):  # 50 x 4 KiB per partition = 200 KiB: fits trn2 (208 KiB), not trn1 (176 KiB)
            t = nl.ndarray((128, 1024), nl.float32, buffer=nl.sbuf)  # BAD
            nisa.memset(dst=t, value=1.0)
            keep.append(t)
        for t in keep:  # every tile is used again at the end: all 50 are live together
            nisa.activation(dst=t, op=nl.exp, data=t)
        return None

    nki.simulate(k)(A)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    err = expect_error("err_sbuf_capacity_exceeded", nki.simulate(k), A)
    assert "trn1" in str(err) and "180224" in str(err)


def test_sbuf_space_is_reused_when_tiles_die() -> None:
    @nki.jit
    def k(a):
        for _ in range(200):
            t = nl.ndarray((128, 1024), nl.float32, buffer=nl.sbuf)  # rebinding frees the previous tile
            nisa.memset(dst=t, value=0.0)
            nisa.activation(dst=t, op=nl.exp, data=t)
        del t
        return None

    import gc

    gc.disable()  # reference counting alone must free them
    try:
        nki.simulate(k)(A)
    finally:
        gc.enable()


def test_psum_capacity() -> None:
    """One PSUM tile larger than the whole PSUM is refused (more tiles than the banks hold are spilled:
    test_nki_accepted_code)."""
    @nki.jit
    def k(a):
        huge = nl.zeros((128, 4100), nl.float32, buffer=nl.psum)  # BAD
        s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=huge[:, 0:1])
        return huge
    err = expect_error("err_psum_capacity_exceeded", nki.simulate(k), A)
    assert "16384" in str(err)


def test_matmul_result_must_not_cross_a_psum_bank() -> None:
    @nki.jit
    def k(a):
        s = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=0.0)
        nisa.memset(dst=m, value=0.0)
        d = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=d[:, 512:1024], stationary=s, moving=m)
        nisa.nc_matmul(dst=d[:, 256:768], stationary=s, moving=m)  # BAD
        return d
    err = expect_error("err_size_of_dimension_exceed_arch_limit", nki.simulate(k), A)
    assert "bank boundary" in str(err)


def test_bf16_dtype_accepted_fp64_dtype_refused() -> None:
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 4), np.float64, buffer=nl.sbuf)  # BAD
        return t
    expect_error("err_unsupported_dtype", nki.simulate(k), np.ones((4, 4), ml_dtypes.bfloat16))


def test_shared_hbm_allocated_outside_the_kernel_function() -> None:
    def make_output(shape):
        return lnl.ndarray(shape, lnl.float32, buffer=lnl.shared_hbm)  # BAD

    @lnki.jit
    def k(a):
        out = make_output(a.shape)
        lnl.store(out, lnl.load(a))
        return out

    with pytest.raises(NkiError) as info:
        k(A)
    assert info.value.code == "err_shared_hbm_must_in_kernel_level"
    assert info.value.lineno == line_of(make_output, "# BAD")


def test_operator_does_not_broadcast_partitions() -> None:
    @lnki.jit
    def k(a):
        t = lnl.load(a)
        row = lnl.load(a[0:1, :])
        fine = lnl.add(t, row)  # the API broadcasts a 1-partition operand
        bad = t + row  # BAD
        return fine, bad
    expect_error("err_num_partition_mismatch", k, A)


def test_psum_tiles_with_unread_matmuls_are_freed() -> None:
    @nki.jit
    def k(a):
        s = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, 512), nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=0.0)
        nisa.memset(dst=m, value=0.0)
        for _ in range(20):  # 20 banks' worth of PSUM over time, never more than one alive
            acc = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=s, moving=m)

    import gc

    gc.disable()  # liveness must come from reference counting alone (no reference cycles), not a GC pass
    try:
        nki.simulate(k)(A)
    finally:
        gc.enable()
