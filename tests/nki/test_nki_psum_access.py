"""AWS's architecture guide: on NeuronCore-v2 the Vector and Scalar engines cannot access PSUM at the same time
(the compiler serialises them); NeuronCore-v3 lifts it."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki import cost
from torchneuron.nki.hardware import TRN1, TRN2
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch


def _second_eviction_end(target, psum: bool) -> float:
    """A Scalar then a Vector instruction, independent, each reading its own PSUM tile (512 elements)."""
    model = cost.CostModel(target)
    model.compute("scalar", 512, reads=(1,), writes=(2,), psum=psum)
    return model.compute("vector", 512, reads=(3,), writes=(4,), psum=psum)


def test_vector_waits_for_scalar_at_psum_on_trn1() -> None:
    scalar_ns, vector_ns = 512 / TRN1.scalar_ghz, 512 / TRN1.vector_ghz
    assert _second_eviction_end(TRN1, psum=True) == pytest.approx(scalar_ns + vector_ns)
    assert _second_eviction_end(TRN1, psum=False) == pytest.approx(vector_ns)


def test_they_overlap_on_trn2() -> None:
    assert _second_eviction_end(TRN2, psum=True) == pytest.approx(512 / TRN2.vector_ghz)


def _evict_two(a, b):
    out = lnl.ndarray((2, 128, 512), a.dtype, buffer=lnl.shared_hbm)
    pa = lnl.ndarray((128, 512), lnl.float32, buffer=lnl.psum)
    pb = lnl.ndarray((128, 512), lnl.float32, buffer=lnl.psum)
    pa[...] = lnl.load(a)
    pb[...] = lnl.load(b)
    lnl.store(out[0], lnisa.activation(op=lnl.copy, data=pa))
    lnl.store(out[1], lnisa.tensor_copy(pb, engine=lnisa.vector_engine))
    return out


def test_kernels_tell_the_model_which_instructions_touch_psum(monkeypatch) -> None:
    seen = []
    compute = cost.CostModel.compute

    def spy(self, engine, cycles, reads=(), writes=(), latency_cycles=0.0, flops=0.0, after=0.0, psum=False,
            tiny=False, in_order=False):
        seen.append((engine, psum))
        return compute(self, engine, cycles, reads, writes, latency_cycles, flops, after, psum, tiny, in_order)

    monkeypatch.setattr(cost.CostModel, "compute", spy)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 512), dtype=np.float32) for _ in range(2))
    done = launch(_evict_two, (a, b), {}, (), "legacy", TRN1)
    np.testing.assert_array_equal(done.results, np.stack([a, b]))
    assert ("scalar", True) in seen and ("vector", True) in seen
