"""The cost-model table of docs/nki_ops.md: every op's kernels at representative shapes, estimated on trn2.

``markdown()`` renders the page; ``tools/gen_nki_ops_table.py`` writes it. The page carries a fingerprint of
what the numbers depend on (the kernels, the cost model, the hardware table, this file), so a test can tell
cheaply that the page is current; the slow test regenerates it in full.

Per row: the kernel's estimated latency on one trn2 NeuronCore, its busiest engine, and the roofline (the
op's ideal work: Tensor-engine FLOPs at peak, or one pass of its inputs and outputs over the core's DMA
bandwidth, whichever binds) as a fraction of the estimate.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from torchneuron.nki import dtypes

TARGET = "trn2"
BF16, FP32 = dtypes.bfloat16, dtypes.float32


@dataclass(frozen=True)
class Case:
    op: str                       # the torch op (torch.ops.nki_ops.<op>)
    kernel: str                   # "module.kernel_name" in nki_ops
    shapes: str                   # how the docs show the call
    args: Callable[[], tuple]     # the kernel's arguments (zeros: the cost model does not look at values)
    flops: float                  # ideal Tensor-engine work of the op
    hbm_bytes: float              # ideal HBM traffic: inputs and outputs once
    fp32: bool = False


def _z(*shape: int, dt: Any = BF16) -> np.ndarray:
    return np.zeros(shape, dtype=dt)


def _bytes(*arrays: tuple[tuple[int, ...], Any]) -> float:
    return float(sum(math.prod(s) * np.dtype(d).itemsize for s, d in arrays))


R, C = 2048, 1024                 # rows x width of the per-row ops
M, K, N = 1024, 1024, 1024        # linear
H, S, D = 2, 1024, 128            # attention (tiled path), heads x seq x head dim
HP, SP = 64, 64                   # attention (packed path): many heads, short sequences
P = 1 << 22                       # AdamW: parameters (fp32)


def _cases() -> list[Case]:
    row, vec, stat = ((R, C), BF16), ((C,), BF16), ((R, 1), FP32)
    att = ((H, S, D), BF16)
    attp = ((HP, SP, D // 2), BF16)
    causal = H * S * S * D            # per matmul: 2 * S^2 * D / 2 (causal half) per head
    causal_p = HP * SP * SP * (D // 2)
    return [
        Case("rmsnorm_fwd", "rmsnorm.rmsnorm_fwd_kernel", f"x [{R}, {C}] bf16", lambda: (_z(R, C), _z(C), 1e-6),
             0.0, _bytes(row, vec, row, stat)),
        Case("rmsnorm_backward", "rmsnorm.rmsnorm_bwd_kernel", f"x [{R}, {C}] bf16",
             lambda: (_z(R, C), _z(R, C), _z(C), _z(R, 1, dt=FP32)), 0.0,
             _bytes(row, row, vec, stat, row, ((C,), FP32))),
        Case("layernorm_fwd", "layernorm.layernorm_fwd_kernel", f"x [{R}, {C}] bf16",
             lambda: (_z(R, C), _z(C), _z(C), 1e-5), 0.0, _bytes(row, vec, vec, row, stat, stat)),
        Case("layernorm_backward", "layernorm.layernorm_bwd_kernel", f"x [{R}, {C}] bf16",
             lambda: (_z(R, C), _z(R, C), _z(C), _z(R, 1, dt=FP32), _z(R, 1, dt=FP32)), 0.0,
             _bytes(row, row, vec, stat, stat, row, ((C,), FP32), ((C,), FP32))),
        Case("softmax", "softmax.softmax_kernel", f"x [{R}, {C}] bf16", lambda: (_z(R, C),), 0.0, _bytes(row, row)),
        Case("softmax_backward", "softmax.softmax_bwd_kernel", f"x [{R}, {C}] bf16", lambda: (_z(R, C), _z(R, C)),
             0.0, _bytes(row, row, row)),
        Case("linear", "matmul.gemm_kernel", f"x [{M}, {K}] @ w[{N}, {K}].T + b, bf16",
             lambda: (_z(M, K), _z(N, K), _z(N), False, True, "none", False), 2.0 * M * N * K,
             _bytes(((M, K), BF16), ((N, K), BF16), ((N,), BF16), ((M, N), BF16))),
        Case("linear_act", "matmul.gemm_kernel", f"gelu_tanh(x [{M}, {K}] @ w.T + b), bf16",
             lambda: (_z(M, K), _z(N, K), _z(N), False, True, "gelu_tanh", True), 2.0 * M * N * K,
             _bytes(((M, K), BF16), ((N, K), BF16), ((N,), BF16), ((M, N), BF16), ((M, N), BF16))),
        Case("linear_backward", "matmul.linear_bwd_kernel", f"dy [{M}, {N}], x [{M}, {K}], w [{N}, {K}], bf16",
             lambda: (_z(M, N), _z(M, K), _z(N, K), True), 4.0 * M * N * K,
             _bytes(((M, N), BF16), ((M, K), BF16), ((N, K), BF16), ((M, K), BF16), ((N, K), BF16), ((N,), FP32))),
        Case("activation_backward", "matmul.activation_bwd_kernel", f"gelu_tanh, [{M}, {N}] bf16",
             lambda: (_z(M, N), _z(M, N), "gelu_tanh"), 0.0, _bytes(((M, N), BF16), ((M, N), BF16), ((M, N), BF16))),
        Case("matmul", "matmul.gemm_kernel", f"a [{M}, {K}] @ b [{K}, {N}], fp32",
             lambda: (_z(M, K, dt=FP32), _z(K, N, dt=FP32), None, False, False, "none", False), 2.0 * M * N * K,
             _bytes(((M, K), FP32), ((K, N), FP32), ((M, N), FP32)), fp32=True),
        Case("matmul_backward", "matmul.gemm_kernel", f"da = dy [{M}, {N}] @ b.T (one of the two launches), fp32",
             lambda: (_z(M, N, dt=FP32), _z(K, N, dt=FP32), None, False, True, "none", False), 2.0 * M * N * K,
             _bytes(((M, N), FP32), ((K, N), FP32), ((M, K), FP32)), fp32=True),
        Case("causal_attention", "attention.flash_attention_fwd_kernel", f"q, k, v [{H}, {S}, {D}] bf16",
             lambda: (_z(H, S, D), _z(H, S, D), _z(H, S, D), D ** -0.5), 2.0 * causal,
             _bytes(att, att, att, att, ((H, S), FP32))),
        Case("causal_attention", "attention.flash_attention_fwd_kernel",
             f"q, k, v [{HP}, {SP}, {D // 2}] bf16 (packed)",
             lambda: (_z(HP, SP, D // 2), _z(HP, SP, D // 2), _z(HP, SP, D // 2), 0.125), 2.0 * causal_p,
             _bytes(attp, attp, attp, attp, ((HP, SP), FP32))),
        Case("causal_attention_backward", "attention.flash_attention_bwd_kernel", f"q, k, v [{H}, {S}, {D}] bf16",
             lambda: (*(_z(H, S, D) for _ in range(5)), _z(H, S, dt=FP32), D ** -0.5), 5.0 * causal,
             _bytes(*([att] * 8), ((H, S), FP32))),
        Case("causal_attention_backward", "attention.flash_attention_bwd_kernel",
             f"q, k, v [{HP}, {SP}, {D // 2}] bf16 (packed)",
             lambda: (*(_z(HP, SP, D // 2) for _ in range(5)), _z(HP, SP, dt=FP32), 0.125), 5.0 * causal_p,
             _bytes(*([attp] * 8), ((HP, SP), FP32))),
        Case("rotary", "rotary.rotary_kernel", f"x [32, {S}, {D}] bf16, cos/sin [{S}, {D}]",
             lambda: (_z(32, S, D), _z(S, D), _z(S, D), False), 0.0,
             _bytes(((32, S, D), BF16), ((32, S, D), BF16), ((S, D), BF16), ((S, D), BF16))),
        Case("rotary_backward", "rotary.rotary_kernel", f"dy [32, {S}, {D}] bf16 (inverse rotation)",
             lambda: (_z(32, S, D), _z(S, D), _z(S, D), True), 0.0,
             _bytes(((32, S, D), BF16), ((32, S, D), BF16), ((S, D), BF16), ((S, D), BF16))),
        Case("adamw_", "adamw.adamw_kernel", f"{P} fp32 parameters",
             lambda: ([_z(P, dt=FP32)], [_z(P, dt=FP32)], [_z(P, dt=FP32)], [_z(P, dt=FP32)], _z(3, dt=FP32),
                      0.9, 0.999, 1e-8), 0.0, 7.0 * P * 4),
    ]


def _kernel(path: str) -> Any:
    import importlib

    module, name = path.split(".")
    return getattr(importlib.import_module(f"nki_ops.{module}"), name)


def rows() -> list[dict[str, Any]]:
    from torchneuron.nki import cost, estimate
    from torchneuron.nki.hardware import target_named

    target = target_named(TARGET)
    out = []
    for case in _cases():
        report = estimate(_kernel(case.kernel), *case.args())
        roof = cost.roofline_ns(case.flops, case.hbm_bytes, target, fp32=case.fp32)
        out.append({"op": case.op, "kernel": case.kernel, "shapes": case.shapes, "latency_us": report.latency_us,
                    "bound": report.bound, "bound_kind": report.bound_kind, "roofline_us": roof / 1000.0,
                    "fraction": roof / report.latency_ns if report.latency_ns else 0.0})
    return out


def fingerprint() -> str:
    """Hash of the sources the numbers come from."""
    import nki_ops
    import torchneuron.nki as nki_pkg

    root = Path(nki_ops.__file__).parent
    sim = Path(nki_pkg.__file__).parent
    # the kernels, and where the simulator charges instruction costs (the cost model, hardware table, instructions)
    files = sorted(root.glob("*.py")) + [sim / "cost.py", sim / "hardware.py"] + sorted((sim / "instructions").glob("*.py"))
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:16]


HEADER = """# nki_ops: estimated cost per op (generated)

<!-- generated by tools/gen_nki_ops_table.py from nki_ops/estimates.py; do not edit by hand.
     fingerprint: {fingerprint} -->

The kernels behind `torch.ops.nki_ops.*` (see `docs/nki.md`, "NKI kernels as torch custom ops"), run by
`torchneuron.nki.estimate` on one {target} NeuronCore. The estimate is the documented cost model, not a
measurement (`neuron-profile` on a Trn host is the ground truth). *Roofline* is the op's ideal time on one
core: its Tensor-engine FLOPs at peak, or one pass of its inputs and outputs over the core's DMA bandwidth,
whichever is larger; *of roofline* is roofline / estimate. Regenerate with
`python tools/gen_nki_ops_table.py` after changing a kernel or the cost model.

| op | kernel | shapes | estimated | bound | roofline | of roofline |
|---|---|---|---|---|---|---|
"""

LIMITS = """
## Limits

The hardware's tile rules the kernels run into, with the NKI error they raise (tests/nki_ops/test_tile_limits.py):

| op | limit | error |
|---|---|---|
| `causal_attention` (+ backward) | head dim d <= 128 (the contraction runs on the 128 partitions) | `err_num_partition_exceed_arch_limit` |
| `rmsnorm`, `layernorm`, `softmax` (+ backward) | a whole row on chip: widest fp32 row on trn2 below | `err_sbuf_capacity_exceeded` |
| `rmsnorm_backward`, `layernorm_backward` | weight-gradient column sums stay in PSUM up to 4096 / 2048 columns, then accumulate in SBUF | (none: wider rows take one more instruction per 512 columns) |
| `linear`, `matmul` | none (any M, K, N; operands of one dtype) | `TypeError` from the op for mixed dtypes |
| `rotary` | even head dim | `ValueError` from the op |
| `causal_attention`, tiled path (seq > 128) | the backward keeps a head's Q, dO, dQ tiles in SBUF: seq * d bounded by SBUF | `err_sbuf_capacity_exceeded` |

Widest row (elements, fp32 / bf16) each per-row kernel accepts on trn2:

| kernel | fp32 | bf16 |
|---|---|---|
"""

ROW_KERNELS = ("rmsnorm.rmsnorm_fwd_kernel", "rmsnorm.rmsnorm_bwd_kernel", "layernorm.layernorm_fwd_kernel",
               "layernorm.layernorm_bwd_kernel", "softmax.softmax_kernel", "softmax.softmax_bwd_kernel")


def _row_args(kernel: str, cols: int, dt: Any) -> tuple:
    import torch

    torch_dt = torch.float32 if dt == FP32 else torch.bfloat16

    def t(*shape: int, d: Any = torch_dt) -> Any:
        return torch.empty(*shape, dtype=d, device="meta")  # shape-only launch: the limit is a shape

    x, w, s = t(4, cols), t(cols), t(4, 1, d=torch.float32)
    return {"rmsnorm.rmsnorm_fwd_kernel": (x, w, 1e-6), "rmsnorm.rmsnorm_bwd_kernel": (x, x, w, s),
            "layernorm.layernorm_fwd_kernel": (x, w, w, 1e-5), "layernorm.layernorm_bwd_kernel": (x, x, w, s, s),
            "softmax.softmax_kernel": (x,), "softmax.softmax_bwd_kernel": (x, x)}[kernel]


def widest_row(kernel: str, dt: Any) -> int:
    """The largest row width the kernel accepts (binary search over shape-only launches)."""
    from torchneuron.nki import NkiError

    def fits(cols: int) -> bool:
        try:
            _kernel(kernel)(*_row_args(kernel, cols, dt))
            return True
        except NkiError as e:
            if e.code != "err_sbuf_capacity_exceeded":
                raise
            return False

    lo, hi = 1, 1 << 17
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def markdown() -> str:
    import os

    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = TARGET
    lines = [HEADER.format(fingerprint=fingerprint(), target=TARGET)]
    for r in rows():
        lines.append(f"| `{r['op']}` | `{r['kernel']}` | {r['shapes']} | {r['latency_us']:.1f} us | "
                     f"{r['bound']} ({r['bound_kind']}) | {r['roofline_us']:.1f} us | {r['fraction']:.0%} |\n")
    lines.append(LIMITS)
    for k in ROW_KERNELS:
        lines.append(f"| `{k}` | {widest_row(k, FP32)} | {widest_row(k, BF16)} |\n")
    return "".join(lines)


def current_fingerprint_in(text: str) -> str | None:
    marker = "fingerprint: "
    i = text.find(marker)
    return text[i + len(marker):].split()[0] if i >= 0 else None

