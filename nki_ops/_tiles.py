"""Tile helpers the kernels share (plain functions: they run inside a kernel, as sub-kernels do)."""

from __future__ import annotations

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl

PMAX = 128          # partitions
PSUM_FMAX = 512     # fp32 elements per PSUM bank and partition
PSUM_BANKS = 8


def row_tiles(rows: int):
    """(start, size) of each 128-row tile; the last one may be partial."""
    for r0 in range(0, rows, PMAX):
        yield r0, min(PMAX, rows - r0)


def load_rows(src, r0: int, r: int, dtype=None):
    """Rows r0..r0+r of a 2-D HBM tensor as an SBUF tile (one DMA)."""
    t = nl.ndarray((r, src.shape[1]), dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src[r0:r0 + r, :])
    return t


def broadcast_rows(vec, cols: int, dtype):
    """A [cols] HBM vector on all 128 partitions of an SBUF tile, with one stride-0 DMA."""
    t = nl.ndarray((PMAX, cols), dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=vec.reshape((1, cols)).broadcast(0, PMAX))
    return t


def transpose_into(dst, src, dtype):
    """SBUF src [p, f] (p, f <= 128) -> SBUF dst [f, p] through the Tensor engine (PSUM in between)."""
    p, f = src.shape[0], src.shape[1]
    ps = nl.ndarray((f, p), dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=ps, data=src)
    nisa.tensor_copy(dst=dst, src=ps)


class ColumnSums:
    """Sums over rows of [r, cols] fp32 tiles on the Tensor engine (ones[r, 1].T @ tile). While the column
    count fits `banks` PSUM banks the sums stay in PSUM and every tile is one matmul per bank; wider rows
    add each bank's partial into an SBUF accumulator."""

    def __init__(self, cols: int, banks: int = 4):
        self.cols = cols
        self.chunks = [(c0, min(PSUM_FMAX, cols - c0)) for c0 in range(0, cols, PSUM_FMAX)]
        self.resident = len(self.chunks) <= banks
        self.ones = nl.ndarray((PMAX, 1), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=self.ones, value=1.0)
        if self.resident:
            self.psum = [nl.ndarray((1, n), nl.float32, buffer=nl.psum) for _, n in self.chunks]
        else:
            self.acc = nl.ndarray((1, cols), nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=self.acc, value=0.0)

    def add(self, tile, r: int) -> None:
        for j, (c0, n) in enumerate(self.chunks):
            if self.resident:
                nisa.nc_matmul(dst=self.psum[j], stationary=self.ones[0:r, :], moving=tile[0:r, c0:c0 + n])
            else:
                part = nl.ndarray((1, n), nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=part, stationary=self.ones[0:r, :], moving=tile[0:r, c0:c0 + n])
                nisa.tensor_tensor(dst=self.acc[:, c0:c0 + n], data1=self.acc[:, c0:c0 + n], data2=part, op=nl.add)

    def store(self, out) -> None:
        """Write the sums to HBM `out` ([cols] or [1, cols])."""
        res = nl.ndarray((1, self.cols), out.dtype, buffer=nl.sbuf)
        if self.resident:
            for (c0, n), bank in zip(self.chunks, self.psum):
                nisa.tensor_copy(dst=res[:, c0:c0 + n], src=bank)
        else:
            nisa.tensor_copy(dst=res, src=self.acc)
        nisa.dma_copy(dst=out.reshape((1, self.cols)), src=res)
