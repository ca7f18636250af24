"""AWS's LayerNorm tutorial (NKI legacy API, measured on trn1), written for this simulator from the
tutorial's steps: v1 (nki.language only) p50 2311 us, v2 (bn_stats / bn_aggr and one two-op tensor_scalar)
1969 us, at the tutorial script's default shape [4096, 8192] fp32 (its perf mode's input; the text mentions
(300, 1000), whose latency could not be milliseconds).
"""

from __future__ import annotations

import numpy as np

from .. import legacy as lnki
from ..legacy import isa as lnisa
from ..legacy import language as lnl

PUBLISHED_MS = {"v1": 2.311, "v2": 1.969}
SHAPE = (4096, 8192)


@lnki.jit
def layernorm_v1(x, eps, gamma, beta):
    rows, cols = x.shape
    out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
    g = lnl.load(gamma.reshape((1, cols))).broadcast_to((128, cols))
    b = lnl.load(beta.reshape((1, cols))).broadcast_to((128, cols))
    for i in lnl.affine_range((rows + 127) // 128):
        t = lnl.load(x[i * 128:(i + 1) * 128, :])
        mean = lnl.mean(t, axis=1)
        var = lnl.mean(lnl.square(t), axis=1) - mean * mean
        y = (t - mean) * lnl.rsqrt(var + eps)
        lnl.store(out[i * 128:(i + 1) * 128, :], value=y * g + b)
    return out


@lnki.jit
def layernorm_v2(x, eps, gamma, beta):
    rows, cols = x.shape
    out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
    g = lnl.load(gamma.reshape((1, cols))).broadcast_to((128, cols))
    b = lnl.load(beta.reshape((1, cols))).broadcast_to((128, cols))
    fmax = 512
    chunks = (cols + fmax - 1) // fmax
    for i in lnl.affine_range((rows + 127) // 128):
        t = lnl.load(x[i * 128:(i + 1) * 128, :])
        stats = lnl.ndarray((128, 6 * chunks), dtype=np.float32)
        for j in lnl.affine_range(chunks):
            stats[:, j * 6:(j + 1) * 6] = lnisa.bn_stats(t[:, j * fmax:(j + 1) * fmax], dtype=np.float32)
        mean_var = lnisa.bn_aggr(stats)
        scale = lnl.rsqrt(mean_var[:, 1:2] + eps)
        y = lnisa.tensor_scalar(data=t, op0=np.subtract, operand0=mean_var[:, 0:1], op1=np.multiply, operand1=scale)
        lnl.store(out[i * 128:(i + 1) * 128, :], value=y * g + b)
    return out


def reference(x, eps, gamma, beta):
    mean, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


CASES = {"v1": layernorm_v1, "v2": layernorm_v2}


def estimate(name: str, rng: np.random.Generator | None = None, target=None, shape: tuple[int, int] = SHAPE):
    """Runs one tutorial version on the simulator (trn1 by default); returns (launch, inputs)."""
    from ..hardware import target_named
    from ..runner import launch

    rng = rng or np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape[1], dtype=np.float32)
    b = rng.standard_normal(shape[1], dtype=np.float32)
    args = (x, 1e-5, g, b)
    return launch(CASES[name].func, args, {}, (), "legacy", target or target_named("trn1")), args
