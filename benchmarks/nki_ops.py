"""The nki_ops kernel library as torch ops on the simulator, measured in one run (JSON).

- kernels: per op, the simulator's wall time for the op on neuron tensors against the torch op on the CPU at
  the same shapes (sim / cpu: how much slower developing on the simulator is than running the reference)
- estimates: per kernel and shape, the cost model's trn2 latency, bound engine and fraction of the roofline
  (the rows of docs/nki_ops.md, recomputed here)
- gpt_train_step: one AdamW step of the GPT-style model of torchneuron/testing/models.py with nki_ops.patch against
  the same step unpatched, both eager on neuron, timed in alternation (patched / unpatched; target <= 10)

The machine these run on is usually shared: ratios are measured in alternation and are medians.

    python benchmarks/nki_ops.py [--out PATH] [--skip-estimates] [--train-step-only]
"""

from __future__ import annotations

import copy
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import warnings  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import nki_ops  # noqa: E402
import nki_ops.torch_ops as ops  # noqa: E402
import torchneuron  # noqa: E402, F401
from _common import emit, paired_seconds, parser  # noqa: E402
from torchneuron.testing.models import GPT  # noqa: E402

TARGETS = {"gpt_train_step_patched_over_eager_max": 10.0}


def _t(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(dtype)


def kernel_cases():
    """name -> (op on neuron args, torch op on cpu args, cpu args)."""
    x, w, b = _t(512, 1024), _t(1024), _t(1024)
    wl, bl = _t(1024, 1024) / 32, _t(1024)
    q = _t(8, 256, 64)
    ang = _t(256, 32)
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    return {
        "rmsnorm [512, 1024]": (lambda x, w: ops.rmsnorm(x, w), lambda x, w: F.rms_norm(x, (1024,), w, 1e-6), (x, w)),
        "layernorm [512, 1024]": (ops.layernorm, lambda x, w, b: F.layer_norm(x, (1024,), w, b), (x, w, b)),
        "softmax [512, 1024]": (ops.softmax, lambda x: torch.softmax(x, -1), (x,)),
        "linear [512, 1024] x [1024, 1024]": (ops.linear, F.linear, (x, wl, bl)),
        "linear+gelu_tanh [512, 1024] x [1024, 1024]": (
            lambda x, w, b: ops.linear(x, w, b, "gelu_tanh"),
            lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), (x, wl, bl)),
        "causal_attention [8, 256, 64]": (ops.causal_attention,
                                          lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                          (q, q, q)),
        "rotary [8, 256, 64]": (ops.rotary, lambda x, c, s: x * c + torch.cat([-x[..., 32:], x[..., :32]], -1) * s,
                                (q, cos, sin)),
    }


def measure_kernels() -> dict:
    out = {}
    sync = torch.neuron.synchronize
    for name, (nki_fn, torch_fn, args) in kernel_cases().items():
        dev = [a.to("neuron") for a in args]
        cpu_s, sim_s, ratio = paired_seconds(lambda f=torch_fn, a=args: f(*a), lambda f=nki_fn, a=dev: f(*a), sync,
                                             inner=2, repeats=5)
        out[name] = {"sim_ms": sim_s * 1e3, "cpu_ms": cpu_s * 1e3, "sim_over_cpu": ratio}
    return out


def measure_train_step() -> dict:
    torch.manual_seed(0)
    base = GPT().to("neuron")
    patched = copy.deepcopy(base)
    swapped = nki_ops.patch(patched)
    tokens = torch.randint(0, 64, (4, 17), generator=torch.Generator().manual_seed(0))
    x, y = tokens[:, :-1].to("neuron"), tokens[:, 1:].to("neuron")
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.1) for m in (base, patched)}

    def step(model):
        opt = opts[id(model)]
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    eager_s, patched_s, ratio = paired_seconds(lambda: step(base), lambda: step(patched), torch.neuron.synchronize,
                                               inner=3, repeats=7)
    return {"modules_swapped": swapped, "eager_ms": eager_s * 1e3, "patched_ms": patched_s * 1e3,
            "patched_over_eager": ratio, "target_max": TARGETS["gpt_train_step_patched_over_eager_max"],
            "meets_target": ratio <= TARGETS["gpt_train_step_patched_over_eager_max"]}


def measure_estimates() -> list:
    from nki_ops import estimates

    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = estimates.TARGET
    return estimates.rows()


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--skip-estimates", action="store_true", help="leave out the cost-model rows (about a minute)")
    p.add_argument("--train-step-only", action="store_true",
                   help="measure only gpt_train_step (no per-kernel timings, no cost-model rows)")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    result = {} if args.train_step_only else {"kernels": measure_kernels()}
    result["gpt_train_step"] = measure_train_step()
    if not args.skip_estimates and not args.train_step_only:
        result["estimates"] = measure_estimates()
    result["seconds"] = time.perf_counter() - t0
    emit(result, args.out)


if __name__ == "__main__":
    main()
