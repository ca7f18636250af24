"""The nrt runtime behind the Runtime seam: devices, memory, copies and item() over libnrt (the fake)."""

from __future__ import annotations

import json


def test_devices_and_target_come_from_libnrt(nrt):
    out = json.loads(nrt.run("""
import json, torch, torchneuron
from torchneuron import _C, targets
before = (torch.neuron.device_count(), _C._is_initialized())
info = _C._runtime_info()
print(json.dumps({"before": before, "info": info, "name": torch.neuron.get_device_name(0),
                  "target": targets.current().name, "props": torch.neuron.get_device_properties(1).total_memory}))
""").stdout)
    assert out["before"] == [4, False]  # counted before nrt_init, without reserving a core
    assert out["info"]["runtime"] == "nrt" and out["info"]["target"] == "trn2"
    assert out["info"]["instance"] == "trn2.3xlarge" and out["info"]["lnc"] == 2 and out["info"]["devices"] == 4
    assert out["props"] == out["info"]["hbm_bytes_per_device"] == 24 << 30  # nrt_get_vnc_memory_stats
    assert out["target"] == "trn2" and "(simulated)" not in out["name"]


def test_visible_cores_and_lnc_select_the_devices(nrt):
    code = "import torch; print(torch.neuron.device_count(), torch.neuron.get_device_properties(0).total_memory >> 30)"
    assert nrt.run(code, NEURON_RT_VISIBLE_CORES="1-2").stdout.split() == ["2", "24"]
    assert nrt.run(code, NEURON_LOGICAL_NC_CONFIG="1").stdout.split() == ["8", "12"]
    bad = nrt.run("import torch; torch.ones(1, device='neuron:2')", NEURON_RT_VISIBLE_CORES="0-1", check=False)
    assert "invalid device index 2" in bad.stderr and "NEURON_RT_VISIBLE_CORES" in bad.stderr


def test_copies_item_and_memory_over_libnrt(nrt):
    nrt.run("""
import torch
x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
d = x.to("neuron")
assert torch.equal(d.cpu(), x)
assert d[1, 2].item() == 8.0                                   # _local_scalar_dense: one nrt_tensor_read
assert torch.equal(d.t().cpu(), x.t())                          # strided read
assert torch.equal(d.to(torch.bfloat16).cpu(), x.to(torch.bfloat16))  # conversion
e = torch.empty(6, 4, device="neuron")
e.copy_(x.t())                                                  # strided host source
assert torch.equal(e.cpu(), x.t().contiguous())
f = d.to("neuron:1")                                            # peer copy through the host
assert f.device.index == 1 and torch.equal(f.cpu(), x)
g = torch.empty(4, 6, device="neuron"); g[:, ::2] = d[:, 1::2]  # strided device-to-device
ref = torch.empty(4, 6); ref[:, ::2] = x[:, 1::2]
assert torch.equal(g[:, ::2].cpu(), ref[:, ::2])
p = torch.ones(1 << 16).pin_memory()
h = p.to("neuron", non_blocking=True)
torch.neuron.synchronize()
assert h.sum().item() == 1 << 16
s = torch.neuron.memory_stats()
assert s["allocated_bytes.all.current"] > 0 and s["num_device_alloc"] >= 1
free, total = torch.neuron.mem_get_info()
assert total == 24 << 30 and free < total
del d, e, f, g, h
torch.neuron.empty_cache()
""")


def test_device_memory_is_not_host_memory(nrt):
    # The DataPtr is libnrt's virtual address: nothing on the host can read it (the fake leaves it unmapped).
    out = nrt.run("""
import torch
x = torch.ones(1024, device="neuron")
ptr = x.data_ptr()
for line in open("/proc/self/maps"):
    lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
    if lo <= ptr < hi:
        print(line.split()[1])
try:
    x.numpy()
except TypeError as e:
    print("numpy:", e)
""").stdout
    assert out.splitlines()[0] == "---p" and "numpy: can't convert neuron" in out


def test_interpreter_exits_cleanly_with_async_copies_in_flight(nrt):
    # nrt_close runs at exit after the queues drain; a source tensor dropped while its copy is queued is released
    # by the worker without the GIL.
    proc = nrt.run("""
import torch
s = torch.neuron.Stream()
with torch.neuron.stream(s):
    for _ in range(20):
        d = torch.ones(1 << 18).pin_memory().to("neuron", non_blocking=True)
x = d * 2
""")
    assert proc.returncode == 0 and "after nrt_close" not in proc.stderr


def test_fork_after_init_is_refused(nrt):
    out = nrt.run("""
import multiprocessing as mp, torch
torch.ones(1, device="neuron")
def child(q):
    try:
        torch.ones(1, device="neuron")
        q.put("ran")
    except RuntimeError as e:
        q.put(str(e))
q = mp.get_context("fork").Queue()
p = mp.get_context("fork").Process(target=child, args=(q,)); p.start(); print(q.get()); p.join()
""").stdout
    assert "forked subprocess" in out and "spawn" in out


def test_nrt_close_runs_at_exit_after_the_programs_own_exit_hooks(nrt):
    # A hook registered before the first device use runs after torchneuron's (atexit is LIFO): by then libnrt is
    # closed, so the late allocation is refused as after nrt_close, which proves nrt_close ran.
    proc = nrt.run("""
import atexit, torch
def late():
    try:
        torch.ones(4).to("neuron")
    except RuntimeError as e:
        print("refused:", "NRT_CLOSED" in str(e) or "closed" in str(e).lower())
atexit.register(late)
(torch.ones(4, device="neuron") + 1).cpu()
torch.neuron.empty_cache()
""")
    assert proc.stdout.strip() == "refused: True", (proc.stdout, proc.stderr)
