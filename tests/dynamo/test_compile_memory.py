"""Compiled programs use device memory as eager ops do: with a 256 MiB simulated HBM, a graph whose intermediate
or output does not fit raises torch.OutOfMemoryError (the eager message), and a compiled output that fits is
counted by memory_allocated / memory_stats while it lives and released when it dies.

One child process (the HBM limit is read at start-up) runs every case and reports; the tests read its report."""

from __future__ import annotations

import re

import pytest

from tests.helpers import run_python_json

pytestmark = pytest.mark.sim_only  # the simulator's HBM limit

SCRIPT = r"""
import json, torch, torchneuron
MiB = 1 << 20
out = {}

def oom(fn):
    try:
        fn()
    except torch.OutOfMemoryError as e:
        return str(e)
    return None

# x @ w is 4096 x 32768 float32 = 512 MiB; softmax needs it whole; the result is 1 MiB
x = torch.randn(4096, 64, device="neuron")
w = torch.randn(64, 32768, device="neuron") / 8

def intermediate(x, w):
    return torch.softmax(x @ w, -1) @ w.t()

out["eager_intermediate"] = oom(lambda: intermediate(x, w))
out["compiled_intermediate"] = oom(lambda: torch.compile(intermediate, backend="neuron")(x, w))

# a 2560 x 32768 float32 result = 320 MiB
a = torch.randn(2560, 64, device="neuron")

def wide(a, w):
    return torch.relu(a @ w) + 1

out["eager_output"] = oom(lambda: wide(a, w))
out["compiled_output"] = oom(lambda: torch.compile(wide, backend="neuron")(a, w))

# a 1024 x 16384 float32 result = 64 MiB fits
b = torch.randn(1024, 64, device="neuron")
small = torch.compile(lambda b, w: torch.relu(b @ w[:, :16384]) + 1, backend="neuron")
torch.neuron.synchronize()
torch.neuron.reset_peak_memory_stats()
base = torch.neuron.memory_allocated()
s0 = torch.neuron.memory_stats()
y = small(b, w)
out["alive"] = torch.neuron.memory_allocated() - base
out["peak"] = torch.neuron.max_memory_allocated() - base
s1 = torch.neuron.memory_stats()
out["allocations"] = s1["allocation.all.allocated"] - s0["allocation.all.allocated"]
out["allocated_bytes"] = s1["allocated_bytes.all.allocated"] - s0["allocated_bytes.all.allocated"]
out["correct"] = bool(torch.allclose(y.cpu(), torch.relu(b.cpu() @ w.cpu()[:, :16384]) + 1, atol=1e-4))
del y
out["after_del"] = torch.neuron.memory_allocated() - base
s2 = torch.neuron.memory_stats()
out["freed_bytes"] = s2["allocated_bytes.all.freed"] - s1["allocated_bytes.all.freed"]

# The cache holds 12 segments of 16 MiB no tensor uses: no 64 MiB compiled result fits in one, and beside them
# it exceeds the limit: the allocator empties the cache and retries, as eager would
torch.neuron.empty_cache()
free = [torch.empty(16 * MiB, dtype=torch.uint8, device="neuron") for _ in range(12)]
del free
retries = torch.neuron.memory_stats()["num_alloc_retries"]
y = small(b, w)
out["retried"] = torch.neuron.memory_stats()["num_alloc_retries"] - retries
out["reserved_after_retry"] = torch.neuron.memory_reserved()
del y
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def report():
    return run_python_json(SCRIPT, timeout=240, TORCHNEURON_SIM_HBM_MB="256")


MiB = 1 << 20


def _form(message: str) -> str:
    """An OOM message with its sizes and the name of what ran blanked: eager and compiled messages differ only
    there ("while running aten::mm ..." / "while running <program> ... (compiled program)")."""
    message = re.sub(r"\d+(\.\d+)? (bytes|KiB|MiB|GiB)", "<size>", message)
    return re.sub(r" \(while running .*\)$", " (while running <what>)", message, flags=re.S)


def test_compiled_intermediate_over_the_limit_raises_oom(report):
    msg = report["compiled_intermediate"]
    assert msg is not None, "a compiled 512 MiB intermediate ran under a 256 MiB limit"
    assert "neuron:0 out of memory: tried to allocate" in msg
    assert re.search(r"tried to allocate 51\d\.\d\d MiB", msg)  # the intermediate (and the small result)
    assert "has a limit of 256.00 MiB" in msg and "is allocated by tensors" in msg
    assert "on neuron:0 (compiled program)" in msg


def test_compiled_output_over_the_limit_raises_oom(report):
    msg = report["compiled_output"]
    assert msg is not None, "a compiled 320 MiB result was made under a 256 MiB limit"
    assert "tried to allocate 320.00 MiB" in msg and "has a limit of 256.00 MiB" in msg


def test_eager_and_compiled_messages_match_in_form(report):
    assert report["eager_intermediate"] is not None and report["eager_output"] is not None
    assert _form(report["compiled_intermediate"]) == _form(report["eager_intermediate"])
    assert _form(report["compiled_output"]) == _form(report["eager_output"])


def test_compiled_output_is_counted_while_alive_and_released(report):
    assert report["correct"]
    assert report["alive"] == 64 * MiB
    assert report["after_del"] == 0
    assert report["peak"] >= 64 * MiB


def test_compiled_output_moves_memory_stats(report):
    assert report["allocations"] >= 1
    assert report["allocated_bytes"] >= 64 * MiB
    assert report["freed_bytes"] >= 64 * MiB


def test_compiled_output_empties_the_cache_and_retries(report):
    assert report["retried"] >= 1
    assert report["reserved_after_retry"] < 192 * MiB
