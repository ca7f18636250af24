"""Eager training-step time on neuron vs CPU, measured in one run (JSON).

- train_step: one optimizer step (zero_grad, forward, loss, backward, clip for GPT, step) of the MLP and the
  GPT-style decoder of torchneuron/testing/models.py, neuron time / CPU time (lower is better; target <= 1.3).
  CPU and neuron are timed in alternation and the ratio is the median of the per-repeat ratios: on a shared
  2-core VM single runs swing by a third
- small_ops: per-call latency neuron/cpu of small ops (16x16 add/mul/matmul, a 64-element sum; target <= 1.5),
  timed the same way
- backward_bmm: a 32x64x32 bmm forward+backward, neuron and cpu. Neuron's backward runs in the autograd
  engine's device thread; with its own OpenMP team there, libgomp throttles spin-waiting for every team and
  the bmm took ~7 ms instead of ~1.4 ms (CPU tensors too). TORCHNEURON_AUTOGRAD_THREADS=1 (the default) keeps
  one team, at the price of a single-threaded backward (docs/eager.md)
- ops_per_step: how many ATen ops one neuron training step runs through the host path, so the ratio can
  be read as (fixed per-op overhead x ops) + kernel time
"""

from __future__ import annotations

import os
import statistics
import sys
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import warnings  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torchneuron  # noqa: E402
from _common import emit, paired_seconds, parser, per_call_seconds, sync_for  # noqa: E402
from torchneuron.testing.models import GPT, MLP  # noqa: E402

TARGETS = {"train_step_ratio_max": 1.3, "small_op_ratio_max": 1.5}

CONFIGS = {
    "mlp": {"model": lambda: MLP(d_in=256, hidden=1024, classes=10), "batch": 64},
    "gpt": {"model": lambda: GPT(vocab=256, d=128, heads=4, layers=2, ctx=64), "batch": 8},
}


def make_step(kind: str, device: str):
    torch.manual_seed(0)
    cfg = CONFIGS[kind]
    model = cfg["model"]().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    if kind == "mlp":
        x = torch.randn(cfg["batch"], 256, generator=g).to(device)
        y = torch.randint(0, 10, (cfg["batch"],), generator=g).to(device)
    else:
        tokens = torch.randint(0, 256, (cfg["batch"], 65), generator=g).to(device)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        if kind == "mlp":
            loss = F.cross_entropy(model(x), y)
        else:
            _, loss = model(x, y)
        loss.backward()
        if kind == "gpt":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return step


def ops_per_step(kind: str) -> int:
    step = make_step(kind, "neuron")
    step()
    torch.neuron.synchronize()
    torchneuron.reset_executed_ops()
    step()
    torch.neuron.synchronize()
    return sum(torchneuron.executed_ops().values())


def small_ops(device: str) -> dict[str, Callable[[], object]]:
    a, b = torch.randn(16, 16, device=device), torch.randn(16, 16, device=device)
    v = torch.randn(64, device=device)
    return {"add": lambda: torch.add(a, b), "mul": lambda: torch.mul(a, b), "sum": lambda: v.sum(),
            "matmul_16x16": lambda: a @ b}


def backward_bmm_seconds(device: str) -> float:
    a = torch.randn(32, 64, 32, device=device, requires_grad=True)
    b = torch.randn(32, 32, 64, device=device, requires_grad=True)
    return per_call_seconds(lambda: torch.bmm(a, b).sum().backward(), sync_for(device), inner=20, repeats=5)


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--steps", type=int, default=10, help="training steps per timing sample")
    args = p.parse_args()
    warnings.simplefilter("ignore")

    result: dict = {"targets": TARGETS, "train_step": {}, "small_ops": {}}
    for kind in CONFIGS:
        cpu, neuron, ratio = paired_seconds(make_step(kind, "cpu"), make_step(kind, "neuron"),
                                            sync_for("neuron"), inner=args.steps)
        result["train_step"][kind] = {
            "cpu_ms": round(cpu * 1e3, 3), "neuron_ms": round(neuron * 1e3, 3), "ratio": round(ratio, 3),
            "ops_per_step": ops_per_step(kind),
            "overhead_us_per_op": round((neuron - cpu) / max(1, ops_per_step(kind)) * 1e6, 2),
        }
    bw = {"cpu": backward_bmm_seconds("cpu"), "neuron": backward_bmm_seconds("neuron")}
    result["backward_bmm"] = {"cpu_us": round(bw["cpu"] * 1e6, 1), "neuron_us": round(bw["neuron"] * 1e6, 1),
                              "ratio": round(bw["neuron"] / bw["cpu"], 3),
                              "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "")}
    small_cpu, small_neuron = small_ops("cpu"), small_ops("neuron")
    for name in small_cpu:
        cpu, neuron, ratio = paired_seconds(small_cpu[name], small_neuron[name], sync_for("neuron"), inner=2000)
        result["small_ops"][name] = {"cpu_us": round(cpu * 1e6, 3), "neuron_us": round(neuron * 1e6, 3),
                                     "ratio": round(ratio, 3)}
    ratios = [v["ratio"] for v in result["small_ops"].values()]
    result["small_op_ratio_median"] = round(statistics.median(ratios), 3)
    result["meets_targets"] = {
        "train_step": all(v["ratio"] <= TARGETS["train_step_ratio_max"] for v in result["train_step"].values()),
        "small_ops": result["small_op_ratio_median"] <= TARGETS["small_op_ratio_max"],
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
