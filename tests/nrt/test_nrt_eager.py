"""Eager ops on a Trn host: each op a NEFF (neuronx-cc -O1, loaded once per device, outputs preallocated),
the rest on the CPU and reported by fallback_ops() — results as on the CPU."""

from __future__ import annotations

import json


def test_ops_run_as_neffs_and_match_the_cpu(nrt):
    script = """
import json, torch, torch.nn.functional as F, torchneuron
torch.manual_seed(0)
x, w, b = torch.randn(8, 16), torch.randn(4, 16), torch.randn(4)
i = torch.tensor([3, 0, 7])
def ops(x, w, b, i):
    y = F.linear(x, w, b)                       # addmm on a transposed weight: a layout program, then the NEFF
    z = y.softmax(-1) * 2 + y.tanh()
    acc = torch.zeros(4, device=x.device, dtype=x.dtype)
    acc.add_(z.sum(0))                          # in place
    out = torch.empty(3, 16, device=x.device)
    torch.index_select(x, 0, i, out=out)        # out=
    return [z, acc, out, (y > 0).float().mean(), torch.cat([x[:2], x[-2:]]), F.layer_norm(x, (16,)),
            x.double().sum(1), (y.argmax(1) == 1), y[:, 1:3] * 1]
cpu = ops(x, w, b, i)
dev = ops(x.to("neuron"), w.to("neuron"), b.to("neuron"), i.to("neuron"))
same = [bool(torch.allclose(c, d.cpu(), rtol=1e-5, atol=1e-6)) if c.is_floating_point()
        else bool(torch.equal(c, d.cpu())) for c, d in zip(cpu, dev)]
print(json.dumps({"same": same, "dtypes": [str(d.dtype) for d in dev], "devices": sorted({str(d.device) for d in dev}),
                  "fallbacks": torchneuron.fallback_ops()}))
"""
    out = json.loads(nrt.run(script).stdout)
    assert all(out["same"]), out
    assert out["devices"] == ["neuron:0"] and "torch.float64" in out["dtypes"] and "torch.bool" in out["dtypes"]
    assert out["fallbacks"] == []
    calls = nrt.compiler_calls()
    assert all(c[c.index("--target") + 1] == "trn2" and "-O1" in c for c in calls)
    # a second process finds every program in the compile cache: nothing is compiled again
    assert json.loads(nrt.run(script).stdout) == out and nrt.compiler_calls() == calls


def test_ops_without_a_lowering_run_on_the_cpu_and_are_reported(nrt):
    out = json.loads(nrt.run("""
import json, warnings, torch, torchneuron
from torchneuron.lowering import coverage
assert coverage.status("aten::_linalg_eigh") == "missing"
a = torch.randn(5, 5)
a = a + a.T
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    values, vectors = torch.linalg.eigh(a.to("neuron"))
ref_values, ref_vectors = torch.linalg.eigh(a)
print(json.dumps({"same": bool(torch.equal(values.cpu(), ref_values) and torch.equal(vectors.cpu(), ref_vectors)),
                  "device": str(values.device), "fallbacks": torchneuron.fallback_ops(),
                  "warned": [str(m.message) for m in w]}))
""").stdout)
    assert out["same"] and out["device"] == "neuron:0"  # the CPU's own kernel, on the bytes read back
    assert "aten::_linalg_eigh" in out["fallbacks"]
    assert any("runs on the CPU" in m for m in out["warned"])
    refused = nrt.run("import torch; torch.linalg.eigh(torch.ones(3, 3).to('neuron'))", check=False,
                      TORCHNEURON_FALLBACK="error")
    assert refused.returncode != 0 and "aten::_linalg_eigh has no StableHLO lowering" in refused.stderr


def test_random_ops_draw_from_the_neuron_generator(nrt):
    out = nrt.run("""
import torch
torch.manual_seed(3)
a = torch.randn(4, device="neuron")
d = torch.nn.functional.dropout(torch.ones(1000, device="neuron"), 0.5)
torch.manual_seed(3)
b = torch.randn(4, device="neuron")
kept = d.cpu()
print(torch.equal(a.cpu(), b.cpu()), 350 < int((kept == 0).sum()) < 650, sorted(set(kept.tolist())))
""").stdout.split(maxsplit=2)
    assert out[:2] == ["True", "True"] and out[2].strip() == "[0.0, 2.0]"


def test_strided_inputs_are_made_dense_on_the_device(nrt):
    out = nrt.run("""
import torch
from torchneuron.programs import nrt_layout
x = torch.randn(6, 8)
d = x.to("neuron")
views = [d.t(), d[:, 1::3]]          # a permutation (transpose program), a strided slice (gather program)
cpu = [x.t(), x[:, 1::3]]
print(all(torch.equal(torch.neg(v).cpu(), torch.neg(c)) for v, c in zip(views, cpu)),
      sum(p is not None for p in nrt_layout._programs.values()))
""").stdout.split()
    assert out == ["True", "2"]
