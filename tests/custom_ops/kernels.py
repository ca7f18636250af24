"""Small NKI kernels the custom-op tests register: both API generations, returned and written outputs."""

from __future__ import annotations

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
import torchneuron.nki.legacy as legacy_nki
import torchneuron.nki.legacy.language as lnl
from torchneuron import nki


@nki.jit
def scale_into(x, out):
    """AWS TorchNeuron's style: the op allocates `out`, the kernel writes it (current API)."""
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)


@nki.jit
def add_returning(a, b):
    """The kernel allocates and returns its output (current API), any row count."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for r0 in range(0, a.shape[0], 128):
        r = min(128, a.shape[0] - r0)
        ta = nl.ndarray((r, a.shape[1]), a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((r, a.shape[1]), b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a[r0:r0 + r, :])
        nisa.dma_copy(dst=tb, src=b[r0:r0 + r, :])
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out[r0:r0 + r, :], src=ta)
    return out


@legacy_nki.jit
def legacy_rows_plus_one(x):
    """Legacy neuronxcc.nki: one 128-row block per program of a 1-D grid."""
    out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
    i = lnl.program_id(0)
    tile = lnl.load(x[i * 128:(i + 1) * 128, :])
    lnl.store(out[i * 128:(i + 1) * 128, :], tile + 1.0)
    return out


@nki.jit
def increment_in_place(x):
    """Writes its input: the caller's tensor changes, as on hardware."""
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=x, src=t)


@nki.jit
def too_many_partitions(x):
    """Allocates a 256-partition tile: err_num_partition_exceed_arch_limit, also when traced shape-only."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((256, x.shape[1]), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def copy_into(x, out):
    """HBM -> SBUF -> HBM, bit-exact for any dtype."""
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)


@nki.jit
def copy_and_plus_one(x):
    """Returns two outputs (a tuple): x and x + 1."""
    same = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    plus = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=same, src=t)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=plus, src=t)
    return same, plus


@nki.jit
def increment_and_return_copy(x):
    """Writes its input and also returns a new output: not expressible as one graph node."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=x, src=t)
    nisa.dma_copy(dst=out, src=t)
    return out
