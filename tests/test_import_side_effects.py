"""Having torchneuron installed changes nothing in a program that never uses the neuron device.

`import torch` autoloads torchneuron into every program (CUDA users' included). Until the first neuron
device initialisation it must leave nn.Module, autograd's device threads, the exit hooks and the CPU allocator
as PyTorch has them; at first use it sets them up (checked too, so the test can fail either way).
"""

from tests.helpers import run_python_json

PROGRAM = """
import atexit, json, sys
import torch
from torch import nn

def state():
    tn = sys.modules.get("torchneuron")
    return {
        "autoloaded": tn is not None,
        "module_to": f"{nn.Module.to.__module__}.{nn.Module.to.__qualname__}",
        "module_cpu": f"{nn.Module.cpu.__module__}.{nn.Module.cpu.__qualname__}",
        "autograd_multithreading": torch.autograd.is_multithreading_enabled(),
        "swap_on_conversion": torch.__future__.get_swap_module_params_on_conversion(),
        "atexit_hooks": atexit._ncallbacks(),
        "cpu_allocator_replaced": bool(tn and tn._C._captures_cpu_allocations()),
        "device_initialised": bool(tn and tn._C._is_initialized()),
    }

# a CPU-only training program: the same bits with and without torchneuron
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to("cpu").double().float()
opt = torch.optim.AdamW(model.parameters())
for _ in range(3):
    loss = model(torch.randn(4, 8)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
out = {"cpu": state(), "loss": loss.double().item()}
if out["cpu"]["autoloaded"]:
    (torch.ones(2, device="neuron") + 1).cpu()  # first use of the device
    out["neuron"] = state()
print(json.dumps(out))
"""


def test_cpu_only_program_is_untouched_until_the_device_is_used():
    without = run_python_json(PROGRAM, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    with_tn = run_python_json(PROGRAM, TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    assert not without["cpu"]["autoloaded"] and with_tn["cpu"]["autoloaded"]
    assert with_tn["loss"] == without["loss"]
    cpu = {k: v for k, v in with_tn["cpu"].items() if k != "autoloaded"}
    assert cpu == {k: v for k, v in without["cpu"].items() if k != "autoloaded"}
    assert cpu["module_to"] == "torch.nn.modules.module.Module.to" and cpu["autograd_multithreading"]
    assert not cpu["cpu_allocator_replaced"] and not cpu["device_initialised"]
    # first use: neuron backward on the calling thread, the exit flush hook, output capture; nn.Module as is
    neuron = with_tn["neuron"]
    assert neuron["device_initialised"] and neuron["cpu_allocator_replaced"]
    assert not neuron["autograd_multithreading"]
    assert neuron["atexit_hooks"] == cpu["atexit_hooks"] + 1
    assert neuron["module_to"] == cpu["module_to"] and not neuron["swap_on_conversion"]


def test_seeding_an_eager_program_does_not_import_dynamo():
    # torch.manual_seed seeds every neuron generator; their Dynamo opacity must not cost an inference program
    # Dynamo's 1.4 s import (PyTorch's own optimizers import it anyway, so this program has none)
    out = run_python_json("""
        import json, sys
        import torch
        torch.manual_seed(0)
        x = torch.randn(4, device="neuron")
        torch.neuron.manual_seed(1)
        state = torch.neuron.get_rng_state()
        print(json.dumps({"dynamo": "torch._dynamo" in sys.modules, "state": state.numel() > 0}))
    """)
    assert out == {"dynamo": False, "state": True}


def test_subpackages_resolve_as_attributes_on_first_access():
    out = run_python_json("""
        import json, sys
        import torchneuron
        names = ["compiler", "custom_ops", "dynamo", "estimator", "lowering", "nki", "profiler", "programs",
                 "testing"]
        before = [n for n in names if f"torchneuron.{n}" in sys.modules]
        resolved = {n: getattr(torchneuron, n).__name__ for n in names}
        print(json.dumps({"before": before, "resolved": resolved, "jit": callable(torchneuron.nki.jit),
                          "listed": sorted(set(names) - set(dir(torchneuron)))}))
    """)
    # lowering.coverage and programs.fallbacks give the op policy installed at import; the rest load on access
    assert set(out["before"]) <= {"lowering", "programs"}, "imported eagerly by import torchneuron"
    assert out["resolved"] == {n: f"torchneuron.{n}" for n in out["resolved"]}
    assert out["jit"] and out["listed"] == []


def test_importing_nki_does_not_initialise_the_device():
    out = run_python_json("""
        import json, sys
        import torchneuron.nki as nki
        import torchneuron.nki.language as nl
        import numpy as np

        @nki.jit
        def add(a, b):
            out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.add(nl.load(a), nl.load(b)))
            return out

        res = nki.simulate(add)(np.ones((4, 8), np.float32), np.ones((4, 8), np.float32))
        tn = sys.modules["torchneuron"]
        print(json.dumps({"sum": float(res.sum()), "initialised": tn._C._is_initialized(),
                          "cpu_allocator_replaced": tn._C._captures_cpu_allocations()}))
    """, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert out == {"sum": 64.0, "initialised": False, "cpu_allocator_replaced": False}


REGISTRATIONS = """
import json, torch
out = {}
for key in torch._C.DispatchKey.__members__:
    try:
        out[key] = sorted(torch._C._dispatch_get_registrations_for_dispatch_key(key))
    except RuntimeError:  # alias and per-backend keys the query does not take
        pass
print(json.dumps(out))
"""

# Outside the neuron keys, what autoload may register, and why: a meta kernel for the fused GRU cell, which has
# no meta kernel in PyTorch (CPU never reaches it) and which fake neuron tensors need; fallthroughs that let a
# conjugated or negated view reach the neuron copy kernel (only backends that copy through `_copy_from` call it).
ALLOWED_OUTSIDE_NEURON_KEYS = {
    "Meta": {"aten::_thnn_fused_gru_cell", "aten::_thnn_fused_gru_cell_backward"},
    "Conjugate": {"aten::_copy_from", "aten::_copy_from_and_resize"},
    "Negative": {"aten::_copy_from", "aten::_copy_from_and_resize"},
}


def test_autoload_registers_no_kernel_a_cpu_program_can_reach():
    without = run_python_json(REGISTRATIONS, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    with_tn = run_python_json(REGISTRATIONS, TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    added = {key: set(with_tn[key]) - set(without.get(key, ())) for key in with_tn}
    removed = {key: set(without[key]) - set(with_tn.get(key, ())) for key in without}
    assert not any(removed.values()), removed
    assert len(added["PrivateUse1"]) > 100  # the query sees torchneuron's kernels, so it would see a stray one
    outside = {key: ops for key, ops in added.items() if ops and "PrivateUse1" not in key}
    assert outside == ALLOWED_OUTSIDE_NEURON_KEYS
