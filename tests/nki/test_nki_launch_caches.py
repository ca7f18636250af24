"""What the simulator remembers between launches (signatures, annotated shapes, strides, reshape answers,
engine names, prefilled tiles) never leaks from one launch into another: the same kernel at other shapes,
dtypes and argument values gives the right results, and bad calls still fail."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
import torchneuron.nki.legacy.typing as nt
from torchneuron import nki
from torchneuron.nki import errors as nki_errors
from torchneuron.nki.core import buffers
from torchneuron.nki.enums import dma_engine, engine
from torchneuron.nki.instructions import elementwise, matmul

RNG = np.random.default_rng(11)


@nki.jit
def reshape_scale_kernel(x, factor, rows=None):
    """x [p, f] -> viewed as [p, f // 2, 2] and back, scaled: exercises strides, reshapes and defaults."""
    p, f = x.shape
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f // 2, 2), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.reshape((p, f // 2, 2)))
    y = nl.ndarray((p, f), x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=t.reshape((p, f)), op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=y)
    return out


@pytest.mark.parametrize("shape", [(64, 32), (32, 64), (128, 8), (64, 32)])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_same_kernel_other_shapes_dtypes_and_values(shape, dtype) -> None:
    x = RNG.standard_normal(shape, dtype=np.float32).astype(dtype)
    for factor in (2.0, -0.5):
        want = (x.astype(np.float32) * np.float32(factor)).astype(dtype)
        np.testing.assert_array_equal(reshape_scale_kernel(x, factor), want)
        np.testing.assert_array_equal(reshape_scale_kernel(x, factor=factor, rows=3), want)


def test_binding_errors_are_still_python_errors() -> None:
    x = RNG.standard_normal((16, 8), dtype=np.float32)
    with pytest.raises(TypeError):
        reshape_scale_kernel(x)  # factor is required
    with pytest.raises(TypeError):
        reshape_scale_kernel(x, 2.0, factor=3.0)  # given twice
    with pytest.raises(TypeError):
        reshape_scale_kernel(x, 2.0, nonsense=1)
    np.testing.assert_array_equal(reshape_scale_kernel(x, 2.0), x * 2)  # and the kernel still launches


def test_annotated_shape_is_checked_on_every_launch() -> None:
    @nki.jit
    def annotated(a: nt.tensor[[16, 8], nl.float32]):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        return out

    good = RNG.standard_normal((16, 8), dtype=np.float32)
    bad = RNG.standard_normal((8, 16), dtype=np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(annotated(good), good)
        with pytest.raises(nki_errors.NkiError, match="annotated"):
            annotated(bad)


def test_engine_names_do_not_mix_up_equal_enums() -> None:
    # IntEnum members equal their ints (engine.tensor == 1 == dma_engine.gpsimd_dma): each keeps its own name
    assert elementwise._engine_name(engine.tensor, "vector") == "tensor"
    assert elementwise._engine_name(1, "vector") == "vector"
    assert elementwise._engine_name(dma_engine.gpsimd_dma, "vector") == "vector"
    assert elementwise._engine_name(engine.tensor, "vector") == "tensor"
    assert elementwise._engine_name(engine.unknown, "scalar") == "scalar"
    assert elementwise._engine_name(engine.unknown, "vector") == "vector"
    assert matmul.engine_name(engine.vector) == "vector"
    assert matmul.engine_name(5) == "5"
    assert matmul.engine_name(engine.vector) == "vector"
    assert matmul.engine_name(None) == "tensor"


def test_new_tiles_are_fresh_sentinel_filled_arrays() -> None:
    f32 = np.dtype(np.float32)
    a = buffers._uninitialised(8, f32)
    a[:] = 1.0
    b = buffers._uninitialised(8, f32)
    assert np.isnan(b).all() and a.base is None and b.base is None  # copies, never views of the template
    big = buffers._uninitialised((1 << 16) + 3, f32)
    assert big.size == (1 << 16) + 3 and np.isnan(big).all()
    assert (buffers._uninitialised(4, np.dtype(np.int32)) == 4).all()
    assert np.isnan(buffers._uninitialised(4, np.dtype(ml_dtypes.bfloat16)).astype(np.float32)).all()
    st = buffers.Storage((4, 8), f32, buffers.PSUM)
    st.written[:] = True
    assert not buffers.Storage((4, 8), f32, buffers.PSUM).written.any()


def test_a_kernel_annotated_after_a_launch_is_checked_from_then_on() -> None:
    @nki.jit
    def copy(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = RNG.standard_normal((8, 16), dtype=np.float32)
    np.testing.assert_array_equal(copy(x), x)
    copy.func.__annotations__["a"] = nt.tensor[[16, 8], nl.float32]  # nothing about annotations is remembered
    with pytest.raises(nki_errors.NkiError, match="annotated"):
        copy(x)
