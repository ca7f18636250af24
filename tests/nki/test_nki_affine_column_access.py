"""`t[i_p, 0]` with `i_p = nl.arange(128)[:, None]` (AWS's LayerNorm tutorial reads its mean and variance so)
is the compiler's access pattern for column 0: the strided view `t[:, 0:1]` is, not a per-element gather. As a
`tensor_scalar` operand it is a per-partition scalar, charged like the slice, and its values are the column's."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import isa as lnisa
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

N = 2048


def _kernel(column):
    def kernel(x, stats):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        t, s = lnl.load(x), lnl.load(stats)
        lnl.store(out, lnisa.tensor_scalar(data=t, op0=np.subtract, operand0=column(s, 0), op1=np.multiply,
                                           operand1=column(s, 1)))
        return out
    return kernel


def _by_arange(s, j):
    return s[lnl.arange(128)[:, None], j]


def _by_slice(s, j):
    return s[:, j:j + 1]


def _by_mgrid(s, j):
    return s[lnl.mgrid[0:128, 0:1].p, j]


@pytest.mark.parametrize("column", [_by_arange, _by_mgrid])
def test_an_arange_row_index_with_an_integer_column_is_the_column_slice(column) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, N), dtype=np.float32)
    stats = rng.standard_normal((128, 2), dtype=np.float32)
    got = launch(_kernel(column), (x, stats), {}, (), "legacy", TRN1)
    want = launch(_kernel(_by_slice), (x, stats), {}, (), "legacy", TRN1)
    np.testing.assert_allclose(got.results, (x - stats[:, :1]) * stats[:, 1:], rtol=1e-6)
    assert got.report.engine_busy_ns == want.report.engine_busy_ns
    assert got.report.latency_ns == want.report.latency_ns
