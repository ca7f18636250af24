"""DMA runs shorter than an HBM burst (an element-strided HBM side, such as storing a tile transposed): they
are walked inside the on-chip side's partition-row descriptors, each run costing one 32-byte burst of queue
time (`cost.HBM_BURST_BYTES`), instead of one 70 ns descriptor per element. Hand-computed on trn1: 16 queues
at 17 B/ns, 70 ns per descriptor."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.nki import cost
from torchneuron.nki.hardware import TRN1
from torchneuron.nki.legacy import language as lnl
from torchneuron.nki.runner import launch

QUEUE_BYTES_PER_NS = TRN1.dma_bytes_per_ns_per_engine


def _rows_ns(rows: int, bytes_moved: float) -> float:
    """One transfer of `rows` descriptors moving `bytes_moved` over all 16 queues."""
    return (rows * cost.DMA_DESCRIPTOR_NS + bytes_moved / QUEUE_BYTES_PER_NS) / 16


def _transposing_store(x):
    out = lnl.ndarray((x.shape[1], x.shape[0]), x.dtype, buffer=lnl.shared_hbm)
    t = lnl.load(x)
    i_p = lnl.arange(x.shape[0])[:, None]
    i_f = lnl.arange(x.shape[1])[None, :]
    lnl.store(out[i_f, i_p], value=t)  # partition p -> HBM column p: 4-byte runs
    return out


def test_a_transposing_store_pays_a_burst_per_element_not_a_descriptor() -> None:
    x = np.random.default_rng(0).standard_normal((128, 512), dtype=np.float32)
    done = launch(_transposing_store, (x,), {}, (), "legacy", TRN1)
    np.testing.assert_array_equal(done.results, x.T)
    load = _rows_ns(128, 128 * 512 * 4)                         # 128 rows of 2 KiB
    store = _rows_ns(128, 128 * 512 * cost.HBM_BURST_BYTES)     # 128 partition rows, 65536 bursts
    assert done.report.engine_busy_ns["dma"] == pytest.approx(load + store)
    assert done.report.dma_bytes == 2 * 128 * 512 * 4           # the bytes themselves, not the bursts
    # the previous rule, one descriptor per 4-byte element, was 4.4x this store
    assert _rows_ns(128 * 512, 128 * 512 * 4) > 4 * store


def test_runs_of_a_burst_or_more_stay_descriptors() -> None:
    """A store whose HBM runs are 64 bytes (16 fp32 per partition row, rows 64 bytes apart) keeps one
    descriptor per run: the burst rule only applies below 32 bytes."""
    def kernel(x):
        out = lnl.ndarray((x.shape[0] * 2, x.shape[1] // 2), x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        i_p = lnl.arange(x.shape[0])[:, None]
        i_f = lnl.arange(x.shape[1] // 2)[None, :]
        lnl.store(out[2 * i_p, i_f], value=t[i_p, i_f])           # every other 64-byte row
        lnl.store(out[2 * i_p + 1, i_f], value=t[i_p, 16 + i_f])
        return out

    x = np.random.default_rng(1).standard_normal((128, 32), dtype=np.float32)
    done = launch(kernel, (x,), {}, (), "legacy", TRN1)
    np.testing.assert_array_equal(done.results, x.reshape(256, 16))
    expected = _rows_ns(128, 128 * 128) + 2 * _rows_ns(128, 128 * 64)
    assert done.report.engine_busy_ns["dma"] == pytest.approx(expected)
