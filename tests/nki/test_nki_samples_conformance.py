"""Semantics that AWS's public NKI kernels rely on, written from AWS's documentation with NumPy references
(issue 32: public NKI code runs unmodified on the simulator, and nothing may be silently wrong)."""

from __future__ import annotations

import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl


def _row_reductions_through_dense_grid(x: np.ndarray, instruction: str) -> np.ndarray:
    """Per 64-column block j of x (128, 4*64), the block's row max (tensor_scalar_reduce) or row sum of exp
    (activation_reduce), written through reduce_res=res[i_p, j] with i_p from nl.mgrid[0:128, 0:4]."""

    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 4), dtype=np.float32, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 4), dtype=np.float32, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:128, 0:4]  # dense, like NumPy's mgrid: i_p is a [128, 4] grid
        for j in nl.affine_range(4):
            tile = nl.load(a[:, j * 64:(j + 1) * 64])
            if instruction == "tensor_scalar_reduce":
                nisa.tensor_scalar_reduce(data=tile, op0=np.multiply, operand0=1.0, reduce_op=np.max,
                                          reduce_res=res[i_p, j])
            else:
                nisa.activation_reduce(op=np.exp, data=tile, reduce_op=np.add, reduce_res=res[i_p, j])
        nl.store(out[i_p, i_f], value=res[i_p, i_f])
        return out

    return nki.simulate_kernel(kernel, x)


@pytest.mark.parametrize("instruction", ["tensor_scalar_reduce", "activation_reduce"])
def test_reduce_res_through_a_dense_mgrid_partition_index(instruction: str) -> None:
    # AWS's allocated SD-attention kernel writes its per-tile row max this way: `res[i_p, k]` uses only the
    # grid's partition variable, so it is a [128, 1] access that receives the row result
    x = np.random.default_rng(0).uniform(-2, 2, (128, 256)).astype(np.float32)
    blocks = x.reshape(128, 4, 64)
    want = blocks.max(axis=2) if instruction == "tensor_scalar_reduce" else np.exp(blocks).sum(axis=2)
    np.testing.assert_allclose(_row_reductions_through_dense_grid(x, instruction), want, rtol=1e-5, atol=1e-5)


def test_reduce_res_of_distinct_elements_is_an_error_not_a_broadcast() -> None:
    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 4), dtype=np.float32, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 4), dtype=np.float32, buffer=nl.sbuf)
        tile = nl.load(a)
        nisa.tensor_scalar_reduce(data=tile, op0=np.multiply, operand0=1.0, reduce_op=np.max, reduce_res=res)
        nl.store(out, value=res)
        return out

    with pytest.raises(nki.NkiError, match="reduce_res"):
        nki.simulate_kernel(kernel, np.ones((128, 64), np.float32))


def test_access_spans_the_grid_variables_it_uses() -> None:
    # exp over 64-column blocks of x with the row bias b: the partition index comes from a [128, 256] grid,
    # the free index from a [1, 64] grid, so `t[i_p, j * 64 + i_f]` is a [128, 64] access and `b[i_p, 0]`
    # a [128, 1] one (what AWS's allocated SD-attention kernel does with its softmax tiles)
    @nki.jit
    def kernel(a, bias):
        out = nl.ndarray(a.shape, dtype=np.float32, buffer=nl.shared_hbm)
        i_p, _ = nl.mgrid[0:128, 0:256]
        _, i_f = nl.mgrid[0:1, 0:64]
        t = nl.load(a)
        b = nl.load(bias)
        res = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.sbuf)
        for j in nl.affine_range(4):
            res[i_p, j * 64 + i_f] = nisa.activation(op=np.exp, data=t[i_p, j * 64 + i_f], bias=b[i_p, 0])
        nl.store(out, value=res)
        return out

    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (128, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (128, 2)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(kernel, x, b), np.exp(x + b[:, :1]), rtol=1e-5, atol=1e-6)
