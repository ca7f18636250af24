"""torch.compile(backend="neuron") on a Trn host: each lowered piece a NEFF from neuronx-cc -O2, run on the
device tensors; forward and backward match the CPU."""

from __future__ import annotations

import json


def test_compiled_training_step_matches_the_cpu(nrt):
    out = json.loads(nrt.run("""
import json, torch
from torchneuron.compiler import driver, neuronx_cc

graphs = []  # each compiled graph piece: (backend, target, opt level, a NEFF executable?), cache hit or not
real_compile = driver.compile
def spy(stablehlo, **kw):
    exe = real_compile(stablehlo, **kw)
    if kw.get("kind") == "graph":
        backend, hw, _, opt = driver.resolve(kw.get("target"), kw.get("lnc"), kw.get("opt_level"), "graph")
        graphs.append([backend, hw, opt, isinstance(exe, neuronx_cc.NeffExecutable)])
    return exe
driver.compile = spy
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
def step(m, x, y):
    loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    return loss
ref = step(model, x, y).item()
ref_grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
dev = model.to("neuron")
compiled = torch.compile(step, backend="neuron")
loss = compiled(dev, x.to("neuron"), y.to("neuron")).item()
same = [bool(torch.allclose(p.grad.cpu(), g, rtol=1e-4, atol=1e-6)) for p, g in zip(dev.parameters(), ref_grads)]
again = compiled(dev, x.to("neuron"), y.to("neuron")).item()
print(json.dumps({"loss": loss, "ref": ref, "grads": same, "again": again, "graphs": graphs}))
""").stdout)
    assert abs(out["loss"] - out["ref"]) < 1e-5 and abs(out["again"] - out["ref"]) < 1e-5 and all(out["grads"])
    assert len(out["graphs"]) >= 2  # the forward and the backward graph
    assert all(g == ["neuronx-cc", "trn2", 2, True] for g in out["graphs"]), out["graphs"]
    # neuronx-cc ran with the documented flags for each graph it compiled (none on a warm cache)
    assert all(c[c.index("--target") + 1] == "trn2" for c in nrt.compiler_calls() if "-O2" in c)


def test_lowered_program_compiled_for_trn2_runs_on_nrt(nrt):
    out = nrt.run("""
import torch, torchneuron
m = torch.nn.Linear(4, 2)
x = torch.randn(3, 4)
ref = m(x).detach()
compiled = torchneuron.lower(m, x).compile("trn2")
on_cpu = compiled(x)                       # CPU tensors in and out, through the current neuron device
m.to("neuron")
on_device = compiled(x.to("neuron"))
print(torch.allclose(on_cpu, ref, atol=1e-6), on_device.device, torch.allclose(on_device.cpu(), ref, atol=1e-6))
""").stdout.split()
    assert out == ["True", "neuron:0", "True"]
