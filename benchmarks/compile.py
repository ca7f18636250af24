"""torch.compile(backend="neuron") against eager neuron, per simulator executor, measured in one run (JSON).

Models: an MLP, a CNN with BatchNorm, a transformer block (8 x 128 x 256, SDPA), a tiny Hugging Face Llama
(training with its own loss) and ResNet-18 (torchvision's architecture, 4 x 3 x 64 x 64).

- per_model: each (model, variant) in its own fresh process, the way a user's program runs (interleaving
  variants in one process distorts them: XLA's thread pool and OpenMP's spinning threads slow each other).
  Variants: eager neuron; compiled on neuron with each simulator executor (aten, the default, with its
  first-call StableHLO check; xla; inductor); eager and inductor on the CPU (the speed bar). Each process
  measures the first training step (compile included), the median training step (forward, loss, backward,
  AdamW step), then the first and median no_grad forward. Ratios: compiled / eager neuron, lower is better.
- paired_aten_vs_eager_neuron: the default executor against eager neuron in one process, steps alternating
  (the same kernels and thread pools, so a few per cent are resolved); the targets are judged on it. Beside
  it, PyTorch's inductor on CPU tensors against eager CPU in the same run (`cpu_inductor_train`/`_forward`).
  Targets: the default executor's training step and forward <= 1.0x eager neuron; its first step not slower
  than the xla executor's.
- first_steps: per model, a cold process (empty compile cache) and a warm one (the same cache again), each
  timed from process start to the end of its first compiled training step, then its first compiled inference
  call (a fresh torch.compile of the model in eval mode under no_grad); the compile time by phase
  (torch.neuron.get_dynamo_metrics()["phase_seconds"]). Target: warm >= 5x sooner than cold (process start to
  end of step).
- per_call_floor: a 4-op elementwise function on 16 elements, compiled vs eager (per call), with Dynamo's own
  floor (backend="eager") for reference. Target <= 3x eager.
- outside_programs: of a compiled training step (compiled forward, eager loss, backward; MLP, transformer
  block), the share of time not spent running the lowered pieces' code. Target <= 10 %.
- generate: Hugging Face static-cache generate of 32 tokens (tiny Gemma2 with a sliding window, tiny Llama),
  which transformers compiles with backend="neuron" by itself: a cold and a warm process (start to end of
  generate), programs built, then a second generate and one with disable_compile=True in the same process.
  Target: warm generate (second call) not slower than disable_compile=True; <= 2 programs.
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

from _common import emit, parser  # noqa: E402

TARGETS = {"default_train_vs_eager_neuron_max": 1.0, "default_forward_vs_eager_neuron_max": 1.0,
           "default_first_step_vs_xla_max": 1.0, "warm_first_step_speedup_min": 5.0,
           "per_call_floor_vs_eager_max": 3.0, "outside_programs_share_max": 0.10, "generate_programs_max": 2,
           "generate_compiled_vs_eager_max": 1.0}
# variant -> (device, torch.compile backend or None, TORCHNEURON_SIM_EXECUTOR)
VARIANTS = {"eager_neuron": ("neuron", None, "aten"), "aten": ("neuron", "neuron", "aten"),
            "xla": ("neuron", "neuron", "xla"), "inductor": ("neuron", "neuron", "inductor"),
            "eager_cpu": ("cpu", None, "aten"), "inductor_cpu": ("cpu", "inductor", "aten")}


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


class Llama(nn.Module):
    """A tiny HF Llama returning its language-model loss (labels = inputs), as a training script uses it."""

    def __init__(self):
        super().__init__()
        import transformers

        self.m = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128))

    def forward(self, ids):
        return self.m(input_ids=ids, labels=ids).loss


def models():
    from torchneuron.testing.models import ResNet18

    return {
        "mlp": (lambda: nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.GELU(),
                                      nn.Linear(1024, 10)), lambda: torch.randn(64, 256)),
        "cnn": (lambda: nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                                      nn.ReLU(), nn.Flatten(), nn.Linear(32 * 16 * 16, 10)),
                lambda: torch.randn(16, 3, 32, 32)),
        "transformer": (Block, lambda: torch.randn(8, 128, 256)),
        "llama": (Llama, lambda: torch.randint(0, 512, (4, 64))),
        "resnet18": (ResNet18, lambda: torch.randn(4, 3, 64, 64)),
    }


FIRST_STEP = """
import time
t0 = time.perf_counter()
import json, sys
sys.path.insert(0, {here!r})
import torch
from compile import models
make_model, make_x = models()[{name!r}]
torch.manual_seed(0)
model = make_model().to("neuron")
x = make_x().to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
t1 = time.perf_counter()
torch.compile(model, backend="neuron")(x).float().square().mean().backward()
opt.step()
torch.neuron.synchronize()
t2 = time.perf_counter()
train_phases = torch.neuron.get_dynamo_metrics()["phase_seconds"]
torch.neuron.reset_dynamo_metrics()
model.eval()
t3 = time.perf_counter()
with torch.no_grad():
    torch.compile(model, backend="neuron")(x)
torch.neuron.synchronize()
t4 = time.perf_counter()
print(json.dumps({{"setup_s": t1 - t0, "first_step_s": t2 - t1, "to_first_step_s": t2 - t0,
                  "first_inference_s": t4 - t3, "train_phases": train_phases,
                  "inference_phases": torch.neuron.get_dynamo_metrics()["phase_seconds"],
                  "torch_mlir_imported": "torch_mlir" in sys.modules,
                  "pattern_matcher_imported": "torch._inductor.pattern_matcher" in sys.modules}}))
"""


FLOOR = """
import json, statistics, time
import torch
def f(x):
    return (x.sin() * 2 + 1).relu()
x = torch.randn(16, device="neuron")
def per_call(g, n=2000):
    for _ in range(200):
        g(x)
    samples = []
    for _ in range(9):
        t = time.perf_counter()
        for _ in range(n):
            g(x)
        samples.append((time.perf_counter() - t) / n)
    return statistics.median(samples) * 1e6
out = {{"eager_us": per_call(f), "compiled_us": per_call(torch.compile(f, backend="neuron")),
       "dynamo_floor_us": per_call(torch.compile(f, backend="eager"))}}
print(json.dumps(out))
"""


OUTSIDE = """
import json, statistics, sys, time
sys.path.insert(0, {here!r})
import torch
from compile import models
from torchneuron.dynamo import aten_executor
inside = [0.0]
real_init = aten_executor.AtenPiece.__init__
def init(self, *a, **k):
    real_init(self, *a, **k)
    fn = self._fn
    def timed(hosts):
        t = time.perf_counter()
        try:
            return fn(hosts)
        finally:
            inside[0] += time.perf_counter() - t
    self._fn = timed
aten_executor.AtenPiece.__init__ = init
make_model, make_x = models()[{name!r}]
torch.manual_seed(0)
model = make_model().to("neuron")
x = make_x().to("neuron")
fn = torch.compile(model, backend="neuron")
def step():
    model.zero_grad(set_to_none=True)  # as a training loop does: gradients are assigned, not accumulated
    fn(x).float().square().mean().backward()
for _ in range(3):
    step()
shares = []
for _ in range(9):
    torch.neuron.synchronize()
    inside[0] = 0.0
    t = time.perf_counter()
    for _ in range(3):
        step()
    torch.neuron.synchronize()
    total = time.perf_counter() - t
    shares.append(1 - inside[0] / total)
print(json.dumps({{"outside_share": statistics.median(shares)}}))
"""


ALONE = """
import json, statistics, sys, time
sys.path.insert(0, {here!r})
import torch
import torchneuron
from compile import models
device, backend = {device!r}, {backend!r}
make_model, make_x = models()[{name!r}]
torch.manual_seed(0)
model = make_model().to(device)
x = make_x().to(device)
fn = torch.compile(model, backend=backend) if backend else model
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
sync = torch.neuron.synchronize if device == "neuron" else (lambda: None)
def step():
    opt.zero_grad(set_to_none=True)
    fn(x).float().square().mean().backward()
    opt.step()
def forward():
    with torch.no_grad():
        fn(x)
def timed(f, inner):
    sync()
    t = time.perf_counter()
    for _ in range(inner):
        f()
    sync()
    return (time.perf_counter() - t) / inner
out = {{"first_step_s": timed(step, 1)}}
for _ in range(2):
    step()
out["train_ms"] = statistics.median(timed(step, 3) for _ in range(7)) * 1e3
model.eval()
out["first_forward_s"] = timed(forward, 1)
forward()
out["forward_ms"] = statistics.median(timed(forward, 3) for _ in range(7)) * 1e3
print(json.dumps(out))
"""


PAIRED = """
import copy, json, statistics, sys, time
sys.path.insert(0, {here!r})
import torch
import torchneuron
from compile import models
make_model, make_x = models()[{name!r}]
torch.manual_seed(0)
eager = make_model().to("neuron")
compiled = copy.deepcopy(eager)
fn = torch.compile(compiled, backend="neuron")
x = make_x().to("neuron")
# the reference: PyTorch's own compiler (inductor) on CPU tensors against eager CPU, alternating in the same run
cpu_eager = copy.deepcopy(eager).to("cpu")
cpu_compiled = copy.deepcopy(cpu_eager)
cpu_fn = torch.compile(cpu_compiled)
inputs = {{m: x if m in (eager, compiled) else x.cpu() for m in (eager, compiled, cpu_eager, cpu_compiled)}}
opts = {{m: torch.optim.AdamW(m.parameters(), lr=1e-4) for m in inputs}}
def step(model, f):
    opts[model].zero_grad(set_to_none=True)
    f(inputs[model]).float().square().mean().backward()
    opts[model].step()
def forward(model, f):
    with torch.no_grad():
        f(inputs[model])
def timed(g, model, f, inner):
    torch.neuron.synchronize()
    t = time.perf_counter()
    for _ in range(inner):
        g(model, f)
    torch.neuron.synchronize()
    return (time.perf_counter() - t) / inner
out = {{}}
for kind, g in (("train", step), ("forward", forward)):
    if kind == "forward":
        for m in inputs:
            m.eval()
    for _ in range(3):
        g(eager, eager); g(compiled, fn); g(cpu_eager, cpu_eager); g(cpu_compiled, cpu_fn)
    ratios, cpu_ratios = [], []
    for r in range(15):  # alternate which goes first
        for (e, c, cf), into in (((eager, compiled, fn), ratios), ((cpu_eager, cpu_compiled, cpu_fn), cpu_ratios)):
            pair = [(e, e), (c, cf)][:: 1 if r % 2 else -1]
            t = {{id(m): timed(g, m, f, 3) for m, f in pair}}
            into.append(t[id(c)] / t[id(e)])
    out[kind] = statistics.median(ratios)
    out["cpu_inductor_" + kind] = statistics.median(cpu_ratios)
print(json.dumps(out))
"""


def paired() -> dict:
    """Compiled (default executor) / eager neuron in one process, the two steps alternating: both run PyTorch's
    CPU kernels with the same thread pools, so the median of per-pair ratios resolves a few per cent, which
    separate processes (per_model) cannot on a shared VM. Beside it, the same model on CPU tensors compiled by
    PyTorch's inductor against eager CPU (`cpu_inductor_*`): what PyTorch's own compiler gains on this machine."""
    out = {}
    for name in models():
        with tempfile.TemporaryDirectory() as cache:
            res = subprocess.run([sys.executable, "-c", PAIRED.format(here=HERE, name=name)], capture_output=True,
                                 text=True, env={**os.environ, "TORCHNEURON_SIM_EXECUTOR": "aten",
                                                 "TORCHNEURON_CACHE_DIR": cache})
        if res.returncode:
            out[name] = {"error": res.stderr.strip().splitlines()[-1][:300]}
            continue
        out[name] = {k: round(v, 3) for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}
    return out


def per_model() -> dict:
    """Each (model, variant) in its own fresh process; ratios are medians over eager neuron's."""
    out = {}
    for name in models():
        runs = {}
        for variant, (device, backend, executor) in VARIANTS.items():
            with tempfile.TemporaryDirectory() as cache:  # cold: no variant reuses another's programs
                res = subprocess.run([sys.executable, "-c", ALONE.format(here=HERE, name=name, device=device,
                                                                         backend=backend)],
                                     capture_output=True, text=True,
                                     env={**os.environ, "TORCHNEURON_SIM_EXECUTOR": executor,
                                          "TORCHNEURON_CACHE_DIR": cache})
            if res.returncode:
                runs[variant] = {"error": res.stderr.strip().splitlines()[-1][:300]}
                continue
            runs[variant] = {k: round(v, 3) for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}
        eager = runs["eager_neuron"]
        entry: dict = {"runs": runs, "train_vs_eager_neuron": {}, "forward_vs_eager_neuron": {}}
        for variant, r in runs.items():
            if variant != "eager_neuron" and "error" not in r and "error" not in eager:
                entry["train_vs_eager_neuron"][variant] = round(r["train_ms"] / eager["train_ms"], 3)
                entry["forward_vs_eager_neuron"][variant] = round(r["forward_ms"] / eager["forward_ms"], 3)
        out[name] = entry
    return out


def verdict(result: dict) -> dict:
    met = {}
    for name, entry in result["per_model"].items():
        pair = result["paired_aten_vs_eager_neuron"].get(name, {})
        train, fwd = pair.get("train"), pair.get("forward")
        runs = entry["runs"]
        first = (runs["aten"]["first_step_s"] / runs["xla"]["first_step_s"]
                 if "error" not in runs["aten"] and "error" not in runs["xla"] else None)
        met[name] = {"train": train is not None and train <= TARGETS["default_train_vs_eager_neuron_max"],
                     "forward": fwd is not None and fwd <= TARGETS["default_forward_vs_eager_neuron_max"],
                     "first_step_vs_xla": None if first is None else round(first, 3),
                     "first_step": first is not None and first <= TARGETS["default_first_step_vs_xla_max"]}
    met["warm_first_step"] = {name: e.get("warm_speedup_process", 0) >= TARGETS["warm_first_step_speedup_min"]
                              for name, e in result["first_steps"].items()}
    floor = result["per_call_floor"].get("compiled_vs_eager")
    met["per_call_floor"] = floor is not None and floor <= TARGETS["per_call_floor_vs_eager_max"]
    met["outside_programs"] = {name: r.get("outside_share", 1) <= TARGETS["outside_programs_share_max"]
                               for name, r in result["outside_programs"].items()}
    met["generate"] = {name: e["warm"].get("programs", 99) <= TARGETS["generate_programs_max"]
                       and e.get("compiled_vs_disable_compile", 99) <= TARGETS["generate_compiled_vs_eager_max"]
                       for name, e in result["generate"].items()}
    return met


GENERATE = """
import time
t0 = time.perf_counter()
import json, torch, transformers
common = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64)
torch.manual_seed(0)
model = (transformers.Gemma2ForCausalLM(transformers.Gemma2Config(head_dim=8, sliding_window=8, **common))
         if {name!r} == "gemma2" else transformers.LlamaForCausalLM(transformers.LlamaConfig(**common)))
model = model.eval().to("neuron")
ids = torch.randint(0, 128, (1, 6)).to("neuron")
def generate(**kw):
    t = time.perf_counter()
    out = model.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                         cache_implementation="static", **kw)
    out.cpu()
    return time.perf_counter() - t, out
first_s, out = generate()
to_first = time.perf_counter() - t0
m = torch.neuron.get_dynamo_metrics()
again_s, again = generate()
eager_s, eager = generate(disable_compile=True)
print(json.dumps({{"to_generated_s": to_first, "first_generate_s": first_s, "second_generate_s": again_s,
                  "disable_compile_s": eager_s, "programs": m["graphs_compiled"], "recompiles": m["recompiles"],
                  "same_tokens": out.tolist() == again.tolist() == eager.tolist()}}))
"""


def _child(script: str, cache: str) -> dict:
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "TORCHNEURON_CACHE_DIR": cache, "TORCHNEURON_SIM_EXECUTOR": "aten"})
    if res.returncode:
        return {"error": res.stderr.strip().splitlines()[-1][:300]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def _rounded(v):
    return {k: _rounded(x) for k, x in v.items()} if isinstance(v, dict) else round(v, 3) if isinstance(
        v, float) else v


def first_steps() -> dict:
    """Per model: a cold then a warm process on one compile cache."""
    out = {}
    for name in models():
        with tempfile.TemporaryDirectory() as cache:
            cold, warm = (_rounded(_child(FIRST_STEP.format(here=HERE, name=name), cache)) for _ in range(2))
        entry = {"cold": cold, "warm": warm}
        if "error" not in cold and "error" not in warm:
            entry["warm_speedup_process"] = round(cold["to_first_step_s"] / warm["to_first_step_s"], 2)
            entry["warm_speedup_first_step"] = round(cold["first_step_s"] / warm["first_step_s"], 2)
            entry["warm_speedup_inference"] = round(cold["first_inference_s"] / warm["first_inference_s"], 2)
        out[name] = entry
    return out


def per_call_floor() -> dict:
    with tempfile.TemporaryDirectory() as cache:
        r = _rounded(_child(FLOOR.format(), cache))
    if "error" not in r:
        r["compiled_vs_eager"] = round(r["compiled_us"] / r["eager_us"], 2)
        r["dynamo_floor_vs_eager"] = round(r["dynamo_floor_us"] / r["eager_us"], 2)
    return r


def outside_programs() -> dict:
    out = {}
    for name in ("mlp", "transformer"):
        with tempfile.TemporaryDirectory() as cache:
            out[name] = _rounded(_child(OUTSIDE.format(here=HERE, name=name), cache))
    return out


def generate() -> dict:
    out = {}
    for name in ("gemma2", "llama"):
        with tempfile.TemporaryDirectory() as cache:
            cold, warm = (_rounded(_child(GENERATE.format(name=name), cache)) for _ in range(2))
        entry = {"cold": cold, "warm": warm}
        if "error" not in warm:
            entry["compiled_vs_disable_compile"] = round(warm["second_generate_s"] / warm["disable_compile_s"], 2)
        out[name] = entry
    return out


PARTS = {"first_steps": first_steps, "generate": generate, "per_call_floor": per_call_floor,
         "outside_programs": outside_programs, "paired_aten_vs_eager_neuron": paired, "per_model": per_model}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {', '.join(PARTS)}")
    args = p.parse_args()
    t0 = time.perf_counter()
    result: dict = {"targets": TARGETS}
    for part in args.parts.split(","):
        result[part] = PARTS[part]()
    if set(PARTS) <= set(result):
        result["met"] = verdict(result)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    emit(result, args.out)


if __name__ == "__main__":
    main()
