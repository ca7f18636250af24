"""PSUM tensors a legacy kernel places itself (`ncc.psum.mod_alloc`, `ncc.psum.alloc`) sit on the banks they
name: tensors named on the same banks share them (the kernel orders their uses), and the compiler neither
moves nor spills them. A matmul result assigned into a tile (`t[...] = nc_matmul(...)`, `psum += ...`) is
written there by the matmul itself and needs no PSUM of its own. Hand-computed on trn1 (Vector 1.12 GHz)."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import compiler as ncc
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

VECTOR_NS = 1 / TRN1.vector_ghz


def _two_tensors_on_the_same_eight_banks(x, y):
    """`a` and `b` each take all 8 banks (8 blocks of 128 x 512 fp32, one bank each), one after the other."""
    out = lnl.ndarray((2, 8, 128, 512), np.float32, buffer=lnl.shared_hbm)
    xs, ys = lnl.load(x), lnl.load(y)
    for name in range(2):
        t = lnl.ndarray((8, lnl.par_dim(128), 512), np.float32,
                        buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(8,)))
        for i in range(8):
            t[i] = lnisa.nc_matmul(xs, ys)           # the matmul writes into the placed bank
        for i in range(8):
            lnl.store(out[name, i], value=lnl.copy(t[i]))
    return out


def test_placed_psum_tensors_share_their_banks_and_are_not_spilled() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 128), dtype=np.float32)
    y = rng.standard_normal((128, 512), dtype=np.float32)
    done = launch(_two_tensors_on_the_same_eight_banks, (x, y), {}, (), "legacy", TRN1)
    np.testing.assert_allclose(done.results[1, 3], x.T @ y, rtol=1e-4, atol=1e-4)
    report = done.report
    assert report.psum_spill_bytes_per_partition == 0
    assert report.peak_psum_bytes_per_partition == TRN1.psum_bytes_per_partition  # 8 banks, not 16 tiles
    # the Vector engine does the 16 PSUM -> SBUF copies (N = 512 each) and nothing else: no spill copies
    assert report.instructions["vector"] == 16
    assert report.engine_busy_ns["vector"] == pytest.approx(16 * 512 * VECTOR_NS)


def test_psum_alloc_function_names_banks() -> None:
    """`psum.alloc(func)` returns (bank, partition, byte offset) per block: two blocks on banks 1 and 5."""
    placement = ncc.psum.alloc(lambda idx, pdim_size, fdim_size: ({(0,): 1, (1,): 5}[idx], 0, 0))
    assert placement.psum_banks((2,), 128, 512, TRN1.psum_bank_bytes, TRN1.psum_banks) == frozenset({1, 5})
    modulo = ncc.psum.mod_alloc(base_bank=6, num_bank_tiles=(4,))
    assert modulo.psum_banks((8,), 128, 2048, TRN1.psum_bank_bytes, TRN1.psum_banks) == frozenset({6, 7, 0, 1})
