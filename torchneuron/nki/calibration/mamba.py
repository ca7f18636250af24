"""AWS's fused Mamba tutorial (NKI legacy API, measured on trn1), written for this simulator from the
tutorial's steps (AWS's kernels are not copied): "mamba_v1" 172.93 us at [batch 1, channels 256, seq_len
512, state 16] and 2.34 ms with 4096 channels; "mamba_v2" (channel loop outside the state loop, delta/u
loaded once per channel tile) 1.61 ms; v2 at seq_len 8192 53.33 ms, with SBUF spills; "mamba_v3" (seq_len
tiled by 512, the scan carried across tiles, the C product in PSUM) 27.8 ms.
"""

from __future__ import annotations

import numpy as np

from .. import legacy as lnki
from ..legacy import isa as lnisa
from ..legacy import language as lnl

PUBLISHED_MS = {"v1_256ch": 0.17293, "v1_4096ch": 2.34, "v2_4096ch": 1.61, "v2_8k": 53.33, "v3_8k": 27.8}


def step(delta_i, u_i, a_col, b_src, c_src, seq, initial, scan_c_in_psum=False):
    """Steps 1-5 for one 128-channel tile and one state, in the tutorial's order (B loaded before step 3,
    C after the scan): exp(delta * A), delta * u * B, the scan, times C (v3 writes that product to PSUM,
    which the accumulation then reads at one element per cycle)."""
    delta_a = lnisa.activation(op=lnl.exp, data=delta_i, scale=a_col)
    b_row = lnl.load(b_src)
    delta_u = lnisa.tensor_tensor(delta_i, u_i, op=lnl.multiply)
    delta_bu = lnisa.tensor_tensor(delta_u, b_row.broadcast_to((128, seq)), op=lnl.multiply)
    scan = lnisa.tensor_tensor_scan(delta_a, delta_bu, initial=initial, op0=np.multiply, op1=np.add)
    c_row = lnl.load(c_src)
    scan_c = lnisa.tensor_tensor(scan, c_row.broadcast_to((128, seq)), op=lnl.multiply)
    if scan_c_in_psum:
        in_psum = lnl.ndarray((128, seq), dtype=lnl.float32, buffer=lnl.psum)
        in_psum[...] = scan_c
        scan_c = in_psum
    return scan, scan_c


@lnki.jit
def mamba_v1(delta, u, a, b, c):
    batch, channels, seq = delta.shape
    states = a.shape[1]
    out = lnl.ndarray(delta.shape, delta.dtype, buffer=lnl.shared_hbm)
    tiles = channels // 128
    for ib in lnl.affine_range(batch):
        acc = lnl.zeros((tiles, lnl.par_dim(128), seq), lnl.float32, buffer=lnl.sbuf)
        for s in lnl.affine_range(states):
            for t in lnl.affine_range(tiles):
                rows = slice(t * 128, (t + 1) * 128)
                _, scan_c = step(lnl.load(delta[ib, rows, :]), lnl.load(u[ib, rows, :]),
                                        lnl.load(a[rows, s:s + 1]), b[ib, s:s + 1, :],
                                        c[ib, s:s + 1, :], seq, 0)
                acc[t] += scan_c
        for t in lnl.affine_range(tiles):
            lnl.store(out[ib, t * 128:(t + 1) * 128, :], acc[t])
    return out


@lnki.jit
def mamba_v2(delta, u, a, b, c):
    batch, channels, seq = delta.shape
    states = a.shape[1]
    out = lnl.ndarray(delta.shape, delta.dtype, buffer=lnl.shared_hbm)
    for ib in lnl.affine_range(batch):
        for t in lnl.affine_range(channels // 128):
            rows = slice(t * 128, (t + 1) * 128)
            acc = lnl.zeros((128, seq), lnl.float32, buffer=lnl.sbuf)
            delta_i, u_i = lnl.load(delta[ib, rows, :]), lnl.load(u[ib, rows, :])
            for s in lnl.affine_range(states):
                _, scan_c = step(delta_i, u_i, lnl.load(a[rows, s:s + 1]), b[ib, s:s + 1, :],
                                        c[ib, s:s + 1, :], seq, 0)
                acc += scan_c
            lnl.store(out[ib, rows, :], acc)
    return out


@lnki.jit
def mamba_v3(delta, u, a, b, c):
    batch, channels, seq = delta.shape
    states = a.shape[1]
    out = lnl.ndarray(delta.shape, delta.dtype, buffer=lnl.shared_hbm)
    f = 512
    for ib in lnl.affine_range(batch):
        for t in lnl.affine_range(channels // 128):
            rows = slice(t * 128, (t + 1) * 128)
            acc = lnl.zeros((128, seq), lnl.float32, buffer=lnl.sbuf)
            delta_i, u_i = lnl.load(delta[ib, rows, :]), lnl.load(u[ib, rows, :])
            for s in lnl.affine_range(states):
                a_col = lnl.load(a[rows, s:s + 1])
                initial = lnl.zeros((128, 1), lnl.float32, buffer=lnl.sbuf)
                for j in lnl.static_range(seq // f):
                    cols = slice(j * f, (j + 1) * f)
                    scan, scan_c = step(delta_i[:, cols], u_i[:, cols], a_col, b[ib, s:s + 1, cols],
                                               c[ib, s:s + 1, cols], f, initial, scan_c_in_psum=True)
                    initial[...] = scan[:, f - 1:f]  # the scan carried into the next seq_len tile
                    acc[:, cols] += scan_c
            lnl.store(out[ib, rows, :], acc)
    return out


def reference(delta, u, a, b, c):
    da = np.exp(delta[:, :, None, :] * a[None, :, :, None])
    dbu = delta[:, :, None, :] * b[:, None, :, :] * u[:, :, None, :]
    state = np.zeros(da.shape[:-1], np.float32)
    out = np.empty_like(da)
    for i in range(da.shape[-1]):
        state = da[..., i] * state + dbu[..., i]
        out[..., i] = state
    return (out * c[:, None, :, :]).sum(axis=2)


# name -> (kernel, channels, seq_len); batch 1, state 16 throughout
CASES = {"v1_256ch": (mamba_v1, 256, 512), "v1_4096ch": (mamba_v1, 4096, 512), "v2_4096ch": (mamba_v2, 4096, 512),
         "v2_8k": (mamba_v2, 4096, 8192), "v3_8k": (mamba_v3, 4096, 8192)}


def inputs(channels: int, seq: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """delta, u, A, B, C as the tutorial shapes them (A negative, so exp(delta * A) decays)."""
    delta = rng.uniform(0.0, 0.1, (1, channels, seq)).astype(np.float32)
    u = rng.standard_normal((1, channels, seq), dtype=np.float32)
    a = -rng.uniform(0.5, 1.5, (channels, 16)).astype(np.float32)
    b = rng.standard_normal((1, 16, seq), dtype=np.float32)
    c = rng.standard_normal((1, 16, seq), dtype=np.float32)
    return delta, u, a, b, c


def estimate(name: str, rng: np.random.Generator | None = None, target=None):
    """Runs one tutorial case on the simulator (trn1 by default); returns (launch, inputs)."""
    from ..hardware import target_named
    from ..runner import launch

    kernel, channels, seq = CASES[name]
    args = inputs(channels, seq, rng or np.random.default_rng(0))
    return launch(kernel.func, args, {}, (), "legacy", target or target_named("trn1")), args
