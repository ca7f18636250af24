"""`tensor_scalar_cumulative` against NumPy transcriptions of AWS's pseudocode: `reg = op1(op0(src[i], imm0),
reg); dst[i] = reg`, with the accumulator set by `reduce_cmd` (reset: op1's identity, load: imm1, reduce:
where the previous cumulative instruction left it), both API generations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchneuron.nki.legacy as lnki
import torchneuron.nki.legacy.isa as lisa
import torchneuron.nki.legacy.language as lnl
from torchneuron import nki
import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl

_OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
        "minimum": np.minimum}
_IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def reference(src: np.ndarray, op0: str, imm0: float, op1: str, reg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AWS's pseudocode, literally: one step per free element."""
    out = np.empty_like(src)
    reg = reg.astype(np.float32).copy()
    for i in range(src.shape[1]):
        reg = _OPS[op1](_OPS[op0](src[:, i], np.float32(imm0)), reg).astype(np.float32)
        out[:, i] = reg
    return out, reg


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 128), f=st.integers(1, 40), op0=st.sampled_from(["add", "multiply"]),
       op1=st.sampled_from(sorted(_OPS)), cmd=st.sampled_from(["reset_reduce", "load_reduce"]),
       seed=st.integers(0, 2**16))
def test_cumulative_follows_the_documented_pseudocode(p: int, f: int, op0: str, op1: str, cmd: str,
                                                       seed: int) -> None:
    rng = np.random.default_rng(seed)
    src = rng.uniform(-1, 1, (p, f)).astype(np.float32)
    seed_col = rng.uniform(-1, 1, (p, 1)).astype(np.float32)
    imm0 = 0.5

    @nki.jit
    def k(x, s):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        c = nl.ndarray(s.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=c, src=s)
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=getattr(nl, op0), op1=getattr(nl, op1), imm0=imm0, imm1=c,
                                      reduce_cmd=getattr(nisa.reduce_cmd, cmd))
        nisa.dma_copy(dst=out, src=r)
        return out

    start = seed_col[:, 0] if cmd == "load_reduce" else np.full(p, _IDENTITY[op1], np.float32)
    want, _ = reference(src, op0, imm0, op1, start)
    np.testing.assert_allclose(nki.simulate(k)(src, seed_col), want, rtol=1e-5, atol=1e-5)


def test_cumulative_reduce_continues_from_the_previous_instruction() -> None:
    """Two halves of a row: the second with reduce_cmd=reduce equals one cumulative sum over the whole row."""

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        h = x.shape[1] // 2
        nisa.tensor_scalar_cumulative(dst=r[:, 0:h], src=t[:, 0:h], op0=nl.multiply, op1=nl.add, imm0=1.0)
        nisa.tensor_scalar_cumulative(dst=r[:, h:], src=t[:, h:], op0=nl.multiply, op1=nl.add, imm0=1.0,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
        nisa.dma_copy(dst=out, src=r)
        return out

    x = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(k)(x), np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)


def test_cumulative_reset_ignores_imm1() -> None:
    """imm1 seeds the accumulator only under load_reduce; reset_reduce starts from op1's identity."""

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.add, imm0=0.0, imm1=100.0,
                                      reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.dma_copy(dst=out, src=r)
        return out

    x = np.ones((8, 4), np.float32)
    np.testing.assert_array_equal(nki.simulate(k)(x), np.cumsum(x, axis=1))


def test_legacy_cumulative_writes_dst_and_honours_mask() -> None:
    """Legacy: `tensor_scalar_cumulative(src, ..., dst=t)` writes t; masked-off columns keep dst's values and
    leave the accumulator alone."""

    @lnki.jit(mode="simulation")
    def k(x):
        out = lnl.ndarray(x.shape, lnl.float32, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        r = lnl.full(x.shape, -7.0, lnl.float32, buffer=lnl.sbuf)
        i_p, i_f = lnl.mgrid[0:x.shape[0], 0:x.shape[1]]
        got = lisa.tensor_scalar_cumulative(t, op0=np.multiply, op1=np.add, imm0=2.0, dst=r, mask=(i_f < 5))
        lnl.store(out, got)
        return out

    x = np.random.default_rng(2).standard_normal((32, 8)).astype(np.float32)
    want = np.full_like(x, -7.0)
    want[:, :5] = np.cumsum(2 * x[:, :5], axis=1)
    np.testing.assert_allclose(k(x), want, rtol=1e-5, atol=1e-5)


def test_cumulative_load_reduce_without_imm1_is_refused() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar_cumulative(dst=t, src=t, op0=nl.add, op1=nl.add, imm0=0.0,
                                      reduce_cmd=nisa.reduce_cmd.load_reduce)
        nisa.dma_copy(dst=out, src=t)
        return out

    with pytest.raises(nki.NkiError, match="imm1"):
        nki.simulate(k)(np.ones((4, 4), np.float32))


@pytest.mark.parametrize("op,ref", [("add", np.sum), ("maximum", np.max), ("minimum", np.min)])
def test_tensor_scalar_reduce_reduce_cmd_chains_instructions(op: str, ref) -> None:
    """A row reduced in three column blocks: reset_reduce, then reduce, reduce equals one reduction of the
    whole row; the intermediate reduce_res holds the running value."""

    @nki.jit
    def k(x):
        out = nl.ndarray((x.shape[0], 2), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        res = nl.ndarray((x.shape[0], 2), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar_reduce(dst=r[:, 0:8], data=t[:, 0:8], op0=nl.multiply, operand0=2.0,
                                  reduce_op=getattr(nl, op), reduce_res=res[:, 0:1])
        nisa.tensor_scalar_reduce(dst=r[:, 8:16], data=t[:, 8:16], op0=nl.multiply, operand0=2.0,
                                  reduce_op=getattr(nl, op), reduce_res=None, reduce_cmd=nisa.reduce_cmd.reduce)
        nisa.tensor_scalar_reduce(dst=r[:, 16:24], data=t[:, 16:24], op0=nl.multiply, operand0=2.0,
                                  reduce_op=getattr(nl, op), reduce_res=res[:, 1:2],
                                  reduce_cmd=nisa.reduce_cmd.reduce)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = np.random.default_rng(3).standard_normal((16, 24)).astype(np.float32)
    got = nki.simulate(k)(x)
    np.testing.assert_allclose(got[:, 0], ref(2 * x[:, :8], axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], ref(2 * x, axis=1), rtol=1e-5, atol=1e-5)


def test_tensor_scalar_reduce_load_reduce_starts_from_reduce_init() -> None:
    @nki.jit
    def k(x, init):
        out = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        i = nl.ndarray(init.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        res = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=i, src=init)
        nisa.tensor_scalar_reduce(dst=r, data=t, op0=nl.add, operand0=1.0, reduce_op=nl.add, reduce_res=res,
                                  reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=i, reduce_res_negate=True)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = np.random.default_rng(4).standard_normal((8, 16)).astype(np.float32)
    init = np.arange(8, dtype=np.float32).reshape(8, 1)
    np.testing.assert_allclose(nki.simulate(k)(x, init), -(init + (x + 1).sum(1, keepdims=True)), rtol=1e-5,
                               atol=1e-5)


def test_scalar_tensor_tensor_reduces_its_result_into_reduce_res() -> None:
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((a.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
        ta = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        tb = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        rr = nl.ndarray((a.shape[0], 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        nisa.scalar_tensor_tensor(dst=r, data=ta, op0=nl.multiply, operand0=3.0, op1=nl.add, operand1=tb,
                                  reduce_op=nl.maximum, reduce_res=rr)
        nisa.dma_copy(dst=out, src=r)
        nisa.dma_copy(dst=red, src=rr)
        return out, red

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((32, 20)).astype(np.float32), rng.standard_normal((32, 20)).astype(np.float32)
    got, red = nki.simulate(k)(a, b)
    np.testing.assert_allclose(got, 3 * a + b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(red, (3 * a + b).max(1, keepdims=True), rtol=1e-6, atol=1e-6)


def test_range_select_reduce_cmd_continues_across_instructions() -> None:
    """A row max over selected columns, computed in two halves: reset_reduce then reduce (the flash-attention
    pattern) equals one max over the whole row."""

    @nki.jit
    def k(x):
        out = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        res = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        h = x.shape[1] // 2
        nisa.range_select(dst=r[:, 0:h], on_true_tile=t[:, 0:h], comp_op0=nl.greater_equal, comp_op1=nl.less,
                          bound0=2.0, bound1=30.0, reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=None,
                          reduce_op=nl.maximum, range_start=0)
        nisa.range_select(dst=r[:, h:], on_true_tile=t[:, h:], comp_op0=nl.greater_equal, comp_op1=nl.less,
                          bound0=2.0, bound1=30.0, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=res,
                          reduce_op=nl.maximum, range_start=h)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = np.random.default_rng(6).standard_normal((16, 40)).astype(np.float32)
    want = x[:, 2:30].max(axis=1, keepdims=True)
    np.testing.assert_allclose(nki.simulate(k)(x), want, rtol=1e-6)


def test_select_reduce_reduce_cmd_continues_across_instructions() -> None:
    @nki.jit
    def k(x):
        out = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        pred = nl.ndarray(x.shape, nl.uint8, buffer=nl.sbuf)
        r = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        res = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=pred, data=t, op0=nl.greater, operand0=0.0)
        h = x.shape[1] // 2
        nisa.select_reduce(dst=r[:, 0:h], predicate=pred[:, 0:h], on_true=t[:, 0:h], on_false=0.0,
                           reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=nl.add)
        nisa.select_reduce(dst=r[:, h:], predicate=pred[:, h:], on_true=t[:, h:], on_false=0.0, reduce_res=res,
                           reduce_cmd=nisa.reduce_cmd.reduce, reduce_op=nl.add)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = np.random.default_rng(7).standard_normal((16, 40)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(k)(x), np.where(x > 0, x, 0).sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
