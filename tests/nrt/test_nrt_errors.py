"""Every failure of libnrt reaches the user as a clear Python exception: a missing or too-old library, each
mapped NRT_STATUS, NRT_RESOURCE as torch.OutOfMemoryError after the caching allocator's retry."""

from __future__ import annotations

import json
import subprocess
import sys

from torchneuron.testing import fake_nrt

INJECT = """
import ctypes, json, torch
fake = ctypes.CDLL("libnrt.so.1")
def inject(fn, status, count=1):
    assert fake.fake_nrt_inject(fn.encode(), status, count) == 0
"""


def test_missing_libnrt_says_how_to_install_it(nrt, tmp_path):
    out = nrt.run("import torch; torch.ones(1, device='neuron')", check=False, LD_LIBRARY_PATH=str(tmp_path))
    assert out.returncode != 0
    assert "libnrt could not be loaded" in out.stderr and "aws-neuronx-runtime-lib" in out.stderr


def test_too_old_libnrt_names_the_version_found(nrt, tmp_path):
    old = fake_nrt.build(tmp_path / "old", version="1.7.0")
    out = nrt.run("import torch; torch.ones(1, device='neuron')", check=False, LD_LIBRARY_PATH=str(old.lib_dir))
    assert "too old" in out.stderr and "libnrt 1.7.0" in out.stderr and "2.x ABI" in out.stderr
    # auto: the simulator, with a warning naming the version
    auto = nrt.run("import torch; torch.ones(1, device='neuron'); print(torch.neuron.get_device_name())",
                   LD_LIBRARY_PATH=str(old.lib_dir), TORCHNEURON_RUNTIME="auto")
    assert "(simulated)" in auto.stdout and "1.7.0" in auto.stderr


def test_auto_picks_nrt_when_libnrt_reports_a_core(nrt):
    code = "import torch; torch.empty(1, device='neuron'); print(torch.neuron.get_device_properties().runtime)"
    assert nrt.run(code, TORCHNEURON_RUNTIME="auto").stdout.strip() == "nrt"


def test_nrt_resource_is_retried_then_out_of_memory(nrt):
    out = json.loads(nrt.run(INJECT + """
keep = torch.empty(1 << 20, device="neuron")
inject("nrt_tensor_allocate", 4)                  # one NRT_RESOURCE: the allocator frees its cache, retries
a = torch.empty(8 << 20, device="neuron")
retries = torch.neuron.memory_stats()["num_alloc_retries"]
inject("nrt_tensor_allocate", 4, 2)               # the retry fails too
try:
    torch.empty(16 << 20, device="neuron")
except torch.OutOfMemoryError as e:
    print(json.dumps({"retries": retries, "oom": str(e), "ooms": torch.neuron.memory_stats()["num_ooms"]}))
""").stdout)
    assert out["retries"] == 1 and out["ooms"] == 1
    msg = out["oom"]
    assert "neuron:0 out of memory: tried to allocate 64.00 MiB" in msg
    assert "limit of 24.00 GiB" in msg and "is allocated by tensors" in msg and "reserved" in msg


def test_each_mapped_status_is_a_clear_exception(nrt):
    statuses = {1: "NRT_FAILURE", 2: "NRT_INVALID", 5: "NEURON_RT_EXEC_TIMEOUT", 6: "hardware error",
                7: "NRT_QUEUE_FULL", 1002: "NRT_EXEC_BAD_INPUT", 1003: "NaN", 1004: "hardware error",
                1005: "NEURON_RT_VISIBLE_CORES", 1100: "collective"}
    out = json.loads(nrt.run(INJECT + f"""
x = torch.randn(8, 8, device="neuron")
(x + 1).cpu()                                      # warm: this program is loaded
errors = {{}}
for status in {list(statuses)}:
    inject("nrt_execute", status)
    try:
        (x + 1).cpu()
        errors[status] = None
    except Exception as e:
        errors[status] = [type(e).__name__, str(e)]
inject("nrt_execute", 4, 2)                         # NRT_RESOURCE while executing, and again after the retry
try:
    (x + 1).cpu()
except torch.OutOfMemoryError as e:
    errors["oom"] = str(e)
for status in (9, 10):                              # at nrt_load: a program not loaded yet
    inject("nrt_load", status)
    try:
        (x * float(status)).exp().cpu()
    except RuntimeError as e:
        errors[status] = ["RuntimeError", str(e)]
print(json.dumps(errors))
""").stdout)
    for status, needle in statuses.items():
        kind, msg = out[str(status)]
        assert kind == "RuntimeError" and "nrt_execute returned NRT_" in msg and f"({status})" in msg, msg
        assert needle in msg and "aten::add.Tensor(float32[8, 8]" in msg, msg
    assert "NRT_RESOURCE" in out["oom"] and "out of device memory" in out["oom"]
    assert "allocated by tensors" in out["oom"] and "its limit is 24576 MiB" in out["oom"]
    assert "nrt_load returned NRT_LOAD_NOT_ENOUGH_NC (9)" in out["9"][1] and "NEURON_RT_NUM_CORES" in out["9"][1]
    assert "NRT_UNSUPPORTED_NEFF_VERSION (10)" in out["10"][1] and "neuronx-cc" in out["10"][1]


def test_nan_is_reported_when_libnrt_is_asked_to(nrt):
    out = nrt.run("""
import torch
x = torch.tensor([-1.0, 2.0], device="neuron")
try:
    print(torch.log(x).cpu())
except RuntimeError as e:
    print("error:", e)
""", NEURON_RT_NUMERICAL_ERRORS_VERBOSITY="critical").stdout
    assert "NRT_EXEC_COMPLETED_WITH_NUM_ERR" in out and "NaN" in out and "aten::log" in out


def test_cores_held_by_another_process(nrt):
    hold = "import torch, sys; torch.empty(1, device='neuron'); print('held', flush=True); sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=nrt.env(NEURON_RT_VISIBLE_CORES="0"), cwd=nrt.tmp)
    try:
        assert holder.stdout.readline().strip() == "held"
        out = nrt.run("import torch; torch.ones(1, device='neuron')", check=False)
        assert "nrt_init returned NRT_EXEC_NC_BUSY (1005)" in out.stderr and "NEURON_RT_VISIBLE_CORES" in out.stderr
        ok = nrt.run("import torch; torch.empty(2, device='neuron'); print(torch.neuron.device_count())",
                     NEURON_RT_VISIBLE_CORES="1-3")
        assert ok.stdout.strip() == "3"
    finally:
        holder.communicate("")
