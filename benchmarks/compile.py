"""torch.compile(backend="neuron") against eager neuron and inductor on the CPU, measured in one run (JSON).

For an MLP, a CNN with BatchNorm and a transformer block (8 x 128 x 256, SDPA):
- forward (no_grad) and training step (forward, loss, backward, AdamW step) per call: compiled on neuron,
  eager on neuron, eager on CPU and inductor on CPU. The neuron variants are timed in alternation (their
  ratios are medians of per-repeat ratios), the CPU ones likewise in a second group (ratios across groups
  are ratios of medians); lower is better. Targets: compiled training step <= 1.2x eager neuron.
- train_step_alone: the training step of each model and variant (eager, XLA:CPU, inductor executor) in its
  own fresh process, the way a user's program runs; interleaving variants in one process distorts them (XLA's
  thread pool and OpenMP's spinning threads slow each other: eager steps measured 40 % slower alternated
  step by step with compiled ones).
- cold and warm time to the first training step in a fresh process (empty compile cache, then the same cache
  again): Dynamo + AOTAutograd + lowering + compile, then Dynamo + AOTAutograd + cache hits. Target: warm
  >= 5x faster than cold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torchneuron  # noqa: E402,F401
from _common import emit, interleaved_seconds, parser, ratio  # noqa: E402

TARGETS = {"compiled_train_vs_eager_neuron_max": 1.2, "inductor_executor_train_vs_eager_neuron_max": 1.0,
           "warm_first_step_speedup_min": 5.0}


class Block(nn.Module):
    def __init__(self, d: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def models():
    return {
        "mlp": (lambda: nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.GELU(),
                                      nn.Linear(1024, 10)), lambda: torch.randn(64, 256)),
        "cnn": (lambda: nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                                      nn.ReLU(), nn.Flatten(), nn.Linear(32 * 16 * 16, 10)),
                lambda: torch.randn(16, 3, 32, 32)),
        "transformer": (Block, lambda: torch.randn(8, 128, 256)),
    }


def variants(name: str, train: bool):
    """Callables for compiled-neuron, eager-neuron, eager-cpu, inductor-cpu."""
    make_model, make_x = models()[name]
    # a fresh Dynamo per model: the MLP and the CNN are both nn.Sequential, and a second compile of the same
    # forward code with other shapes would make Dynamo mark their dimensions dynamic
    torch._dynamo.reset()
    out = {}
    for label, device, compiler in (("compiled_neuron", "neuron", "neuron"),
                                    ("compiled_neuron_inductor_executor", "neuron", "neuron"),
                                    ("eager_neuron", "neuron", None), ("eager_cpu", "cpu", None),
                                    ("inductor_cpu", "cpu", "inductor")):
        torch.manual_seed(0)
        model = make_model().to(device).train(train)
        x = make_x().to(device)
        fn = torch.compile(model, backend=compiler) if compiler else model
        if train:
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

            def step(fn=fn, x=x, opt=opt):
                opt.zero_grad(set_to_none=True)
                fn(x).square().mean().backward()
                opt.step()
        else:
            def step(fn=fn, x=x):
                with torch.no_grad():
                    fn(x)
        executor = "inductor" if label.endswith("inductor_executor") else "xla"
        with _env_set("TORCHNEURON_SIM_EXECUTOR", executor):
            step()  # compiles here, with this executor
        out[label] = step
    return out


class _env_set:
    def __init__(self, name: str, value: str):
        self.name, self.value, self.saved = name, value, None

    def __enter__(self):
        self.saved = os.environ.get(self.name)
        os.environ[self.name] = self.value

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop(self.name, None)
        else:
            os.environ[self.name] = self.saved


def measure(name: str, train: bool) -> dict:
    fns = variants(name, train)  # compiled outside the timed region
    inner = {"mlp": 10, "cnn": 4, "transformer": 3}[name]
    # Two groups, each timed in alternation: interleaving inductor's CPU code (OpenMP threads that spin after
    # each call) with XLA:CPU's own thread pool makes both slower than either is in a user's program.
    neuron = {k: v for k, v in fns.items() if k.endswith(("neuron", "executor"))}
    cpu = {k: v for k, v in fns.items() if k not in neuron}
    medians, samples = interleaved_seconds(neuron, torch.neuron.synchronize, inner=inner, repeats=7)
    cpu_medians, _ = interleaved_seconds(cpu, torch.neuron.synchronize, inner=inner, repeats=7)
    medians.update(cpu_medians)
    return {
        "ms": {k: round(v * 1e3, 3) for k, v in medians.items()},
        "compiled_vs_eager_neuron": round(ratio(samples, "compiled_neuron", "eager_neuron"), 3),
        "inductor_executor_vs_eager_neuron": round(
            ratio(samples, "compiled_neuron_inductor_executor", "eager_neuron"), 3),
        "compiled_vs_inductor_cpu": round(medians["compiled_neuron"] / medians["inductor_cpu"], 3),
        "eager_neuron_vs_eager_cpu": round(medians["eager_neuron"] / medians["eager_cpu"], 3),
    }


FIRST_STEP = """
import json, sys, time
sys.path.insert(0, {here!r})
t0 = time.perf_counter()
import torch
from compile import models
make_model, make_x = models()["transformer"]
torch.manual_seed(0)
model = make_model().to("neuron")
x = make_x().to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
t1 = time.perf_counter()
torch.compile(model, backend="neuron")(x).square().mean().backward()
opt.step()
torch.neuron.synchronize()
print(json.dumps({{"import_s": t1 - t0, "first_step_s": time.perf_counter() - t1,
                  "torch_mlir_imported": "torch_mlir" in sys.modules}}))
"""


ALONE = """
import json, statistics, sys, time
sys.path.insert(0, {here!r})
import torch
from compile import models
make_model, make_x = models()[{name!r}]
torch.manual_seed(0)
model = make_model().to("neuron")
x = make_x().to("neuron")
fn = model if {variant!r} == "eager" else torch.compile(model, backend="neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
def step():
    opt.zero_grad(set_to_none=True)
    fn(x).square().mean().backward()
    opt.step()
for _ in range(3):
    step()
samples = []
for _ in range(7):
    torch.neuron.synchronize()
    t = time.perf_counter()
    for _ in range(5):
        step()
    torch.neuron.synchronize()
    samples.append((time.perf_counter() - t) / 5)
print(json.dumps(statistics.median(samples)))
"""


def train_steps_alone() -> dict:
    """Each (model, variant) training step in its own fresh process, as a user's program runs it: no other
    variant's thread pools or caches around. Ratios are compiled / eager neuron medians."""
    out = {}
    for name in models():
        ms = {}
        for variant, executor in (("eager", "xla"), ("xla", "xla"), ("inductor_executor", "inductor")):
            res = subprocess.run([sys.executable, "-c", ALONE.format(here=HERE, name=name, variant=variant)],
                                 capture_output=True, text=True, check=True,
                                 env={**os.environ, "TORCHNEURON_SIM_EXECUTOR": executor})
            ms[variant] = round(json.loads(res.stdout.strip().splitlines()[-1]) * 1e3, 3)
        out[name] = {"ms": ms, "xla_vs_eager_neuron": round(ms["xla"] / ms["eager"], 3),
                     "inductor_executor_vs_eager_neuron": round(ms["inductor_executor"] / ms["eager"], 3)}
    return out


def first_steps() -> dict:
    with tempfile.TemporaryDirectory() as cache:
        runs = []
        for _ in ("cold", "warm"):
            res = subprocess.run([sys.executable, "-c", FIRST_STEP.format(here=HERE)], capture_output=True,
                                 text=True, env={**os.environ, "TORCHNEURON_CACHE_DIR": cache}, check=True)
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    return {"cold": cold, "warm": warm,
            "warm_speedup": round(cold["first_step_s"] / warm["first_step_s"], 2)}


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    t0 = time.perf_counter()
    result: dict = {"targets": TARGETS, "forward": {}, "train_step": {}}
    for name in models():
        result["forward"][name] = measure(name, train=False)
        result["train_step"][name] = measure(name, train=True)
    result["train_step_alone"] = train_steps_alone()
    result["first_step_transformer"] = first_steps()
    result["metrics"] = torch.neuron.get_dynamo_metrics()
    result["seconds"] = round(time.perf_counter() - t0, 1)
    emit(result, args.out)


if __name__ == "__main__":
    main()
