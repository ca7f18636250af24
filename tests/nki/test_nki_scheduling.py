"""Instruction ordering the kernel asks for: nki.isa calls return an NkiInstruction whose `depends_on` adds a
runtime or schedule edge, `kernel.with_schedule` adds schedule edges by instruction name, and `no_reorder`
keeps program order. Values never depend on them; the cost model's schedule does (trn2)."""

from __future__ import annotations

import numpy as np
import pytest

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki import cost
from torchneuron.nki.hardware import TRN2

SCALAR_NS = 2048 / TRN2.scalar_ghz  # one activation over 2048 fp32 elements per partition
MEMSET_NS = cost.vector_cycles(TRN2, 2048) / TRN2.vector_ghz
RESULT_NS = cost.SBUF_ACCESS_CYCLES / TRN2.scalar_ghz  # an exp result's SBUF latency, before the add reads it
X = np.full((128, 2048), 0.5, np.float32)


def _two_independent(edge: str):
    """An exp on the Scalar engine and an unrelated memset on the Vector engine, each ready at once."""
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        load = nisa.dma_copy(dst=t, src=x)
        e = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        z = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        memset = nisa.memset(dst=z, value=1.0, engine=nisa.vector_engine)
        exp = nisa.activation(dst=e, op=nl.exp, data=t)
        if edge == "runtime":
            memset.depends_on(exp, kind=nisa.dependency.runtime)
        elif edge == "schedule":
            memset.depends_on(exp, kind=nisa.dependency.schedule)
        elif edge == "default":
            assert memset.depends_on(exp) is memset
        assert isinstance(load, nisa.NkiInstruction)
        nisa.tensor_tensor(dst=e, data1=e, data2=z, op=nl.add)
        nisa.dma_copy(dst=out, src=e)
        return out
    return k


def test_isa_calls_return_instruction_handles_and_values_ignore_edges() -> None:
    for edge in ("none", "runtime", "schedule", "default"):
        np.testing.assert_allclose(nki.simulate(_two_independent(edge))(X), np.exp(X) + 1, rtol=1e-6)


def test_a_runtime_dependency_waits_for_the_producer_to_end() -> None:
    """Unordered, the memset runs while the exp waits for its load; made to wait for the exp, it follows it."""
    free = nki.estimate(_two_independent("none"), X)
    runtime = nki.estimate(_two_independent("runtime"), X)
    default = nki.estimate(_two_independent("default"), X)
    assert runtime.latency_ns == default.latency_ns
    # the add now waits for the memset after the exp, instead of for the exp's result
    assert runtime.latency_ns - free.latency_ns == pytest.approx(MEMSET_NS - RESULT_NS, rel=1e-6)


def test_a_schedule_dependency_only_keeps_the_issue_order() -> None:
    """A schedule edge lets the memset overlap the exp on its own engine: it starts with the exp, not after."""
    free = nki.estimate(_two_independent("none"), X)
    schedule = nki.estimate(_two_independent("schedule"), X)
    runtime = nki.estimate(_two_independent("runtime"), X)
    assert free.latency_ns < schedule.latency_ns < runtime.latency_ns
    # the memset starts with the exp and, longer, ends after it: the add waits for the memset
    assert schedule.latency_ns - free.latency_ns == pytest.approx(MEMSET_NS - SCALAR_NS - RESULT_NS, rel=1e-6)


def _named(schedule):
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        b = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=a, op=nl.exp, data=t, name="waits")           # waits for the load
        nisa.activation(dst=b, op=nl.exp, data=x_const(b), name="free")   # ready at once
        nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
        nisa.dma_copy(dst=out, src=a)
        return out

    def x_const(b):
        nisa.memset(dst=b, value=0.0, engine=nisa.gpsimd_engine)
        return b
    return k.with_schedule(schedule) if schedule else k


def test_with_schedule_orders_named_instructions_even_against_program_order() -> None:
    """`free` runs on the Scalar engine while `waits` waits for its load; scheduled after `waits` (a later
    instruction in program order made to wait for an earlier one is fine; here the edge points back), it
    follows it."""
    plain = nki.estimate(_named(None), X)
    ordered = nki.estimate(_named([("free", "waits")]), X)
    np.testing.assert_allclose(nki.simulate(_named([("free", ["waits"])]))(X), np.exp(X) + 1, rtol=1e-6)
    assert ordered.latency_ns - plain.latency_ns == pytest.approx(SCALAR_NS, rel=0.05)
    backwards = nki.estimate(_named([("waits", "free")]), X)  # the order they run in anyway
    assert backwards.latency_ns == pytest.approx(plain.latency_ns)
    bench = nki.benchmark(warmup=1, iters=1)(_named([("free", "waits")]))
    bench(X)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) * 1e3 == pytest.approx(ordered.latency_ns)


def test_scheduling_mistakes_are_named() -> None:
    with pytest.raises(nki.NkiError, match="with_schedule names instruction 'nope'.*'free', 'waits'"):
        nki.estimate(_named([("nope", "waits")]), X)
    with pytest.raises(nki.NkiError, match="not a pair"):
        _named(None).with_schedule(["free"])
    with pytest.raises(nki.NkiError, match="form a cycle"):
        nki.estimate(_named([("free", "waits"), ("waits", "free")]), X)

    @nki.jit
    def across_a_dynamic_loop(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        first = nisa.dma_copy(dst=t, src=x)
        inner = []
        for _ in nl.dynamic_range(2):
            inner.append(nisa.activation(dst=t, op=nl.exp, data=t))
            inner[-1].depends_on(first)  # the producer in an enclosing scope: allowed
        last = nisa.dma_copy(dst=out, src=t)
        last.depends_on(inner[-1], kind=nisa.dependency.schedule)  # schedule edges may cross loops
        last.depends_on(inner[-1])  # a runtime edge out of the loop may not
        return out

    with pytest.raises(nki.NkiError, match="different dynamic loops.*dependency.schedule"):
        nki.simulate(across_a_dynamic_loop)(X)


def test_a_runtime_edge_within_one_dynamic_loop_statement_crosses_its_iterations() -> None:
    """`same dynamic-loop nesting` is where the instructions are written: an edge from the previous outer
    iteration's inner-loop instruction is fine, one from a sibling loop's is not."""
    @nki.jit
    def nested(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        previous = None
        for _ in nl.dynamic_range(2):
            for _ in nl.dynamic_range(2):
                step = nisa.activation(dst=t, op=nl.copy, data=t)
                if previous is not None:
                    step.depends_on(previous)
                previous = step
        nisa.dma_copy(dst=out, src=t)
        return out

    np.testing.assert_array_equal(nki.simulate(nested)(X), X)

    @nki.jit
    def siblings(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        first = []
        nl.fori_loop(0, 2, lambda i: first.append(nisa.activation(dst=t, op=nl.copy, data=t)))
        nl.fori_loop(0, 2, lambda i: nisa.activation(dst=t, op=nl.copy, data=t).depends_on(first[-1]))
        nisa.dma_copy(dst=out, src=t)
        return out

    with pytest.raises(nki.NkiError, match="different dynamic loops"):
        nki.simulate(siblings)(X)
