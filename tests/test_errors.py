"""Bad input gives the error PyTorch gives on CUDA (same exception type, the device named) and the process
carries on: device mixing, a dtype a kernel does not support, out-of-range indices."""

from __future__ import annotations

import gc
import re

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _works_after():
    """The device still computes correctly after an error."""
    a = torch.arange(6.0, device="neuron").reshape(2, 3)
    assert torch.equal((a * 2).sum(0).cpu(), torch.tensor([6.0, 10.0, 14.0]))


# ----------------------------------------------------------------------------------------- device mixing


@pytest.mark.parametrize(
    "fn",
    [
        lambda n, c: n + c,
        lambda n, c: torch.mm(n, c),
        lambda n, c: torch.cat([n, c]),
        lambda n, c: torch.where(n > 0, n, c),
        lambda n, c: n.add_(c),
    ],
    ids=["add", "mm", "cat", "where", "add_"],
)
def test_neuron_and_cpu_tensors_in_one_op(fn):
    n, c = torch.ones(3, 3, device="neuron"), torch.ones(3, 3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device") as info:
        fn(n, c)
    assert "neuron:0" in str(info.value) and "cpu" in str(info.value)
    _works_after()


def test_two_neuron_devices_in_one_op():
    a, b = torch.ones(4, device="neuron:0"), torch.ones(4, device="neuron:1")
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*neuron:0.*neuron:1"):
        torch.add(a, b)
    _works_after()


def test_cpu_scalars_mix_with_neuron_tensors_as_on_cuda():
    n = torch.ones(3, device="neuron")
    assert torch.equal((n * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))
    assert (n * torch.tensor(2.0)).device.type == "neuron"


def test_module_on_neuron_with_cpu_input():
    layer = torch.nn.Linear(4, 2).to("neuron")
    with pytest.raises(RuntimeError, match="same device.*neuron"):
        layer(torch.ones(1, 4))
    _works_after()


def test_numpy_of_a_neuron_tensor_is_refused_as_on_cuda():
    with pytest.raises(TypeError, match="neuron"):
        torch.ones(2, device="neuron").numpy()


def test_device_index_out_of_range():
    count = torch.neuron.device_count()
    with pytest.raises(RuntimeError, match=f"neuron.*{count}|{count}.*neuron"):
        torch.ones(1, device=f"neuron:{count}")
    _works_after()


# ---------------------------------------------------------------------------------- unsupported dtypes


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_arithmetic_on_fp8_is_not_implemented(dtype):
    x = torch.zeros(4, dtype=dtype, device="neuron")
    with pytest.raises(NotImplementedError, match=re.escape(str(dtype).split(".")[-1].capitalize()[:6])) as info:
        x + x
    message = str(info.value)
    assert "not implemented for" in message and "neuron:0" in message and "aten::add" in message
    _works_after()


def test_integer_softmax_refused_like_the_cpu():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'") as info:
        torch.softmax(torch.arange(4, device="neuron"), 0)
    assert "neuron" in str(info.value)
    _works_after()


def test_mismatched_matmul_dtypes():
    with pytest.raises(RuntimeError, match="same dtype") as info:
        torch.mm(torch.ones(2, 2, device="neuron"), torch.ones(2, 2, device="neuron", dtype=torch.bfloat16))
    assert "neuron" in str(info.value)
    _works_after()


# ---------------------------------------------------------------------------------- out-of-range indices
# On CUDA these are device-side asserts that poison the context; on neuron they raise the CPU kernel's
# error (same type as the CPU), naming the device, and the process and device stay usable.

INDEX_CASES = {
    "index_select": lambda d: torch.index_select(torch.ones(3, device=d), 0, torch.tensor([5], device=d)),
    "getitem": lambda d: torch.ones(3, device=d)[torch.tensor([3], device=d)],
    "gather": lambda d: torch.gather(torch.ones(2, 2, device=d), 1, torch.tensor([[0, 7]], device=d)),
    "scatter": lambda d: torch.zeros(3, device=d).scatter_(0, torch.tensor([9], device=d), 1.0),
    "embedding": lambda d: F.embedding(torch.tensor([10], device=d), torch.ones(4, 2, device=d)),
    "index_put": lambda d: torch.zeros(3, device=d).index_put_((torch.tensor([4], device=d),), torch.ones(1, device=d)),
    "nll_loss": lambda d: F.nll_loss(torch.zeros(2, 3, device=d), torch.tensor([0, 5], device=d)),
}


@pytest.mark.parametrize("case", list(INDEX_CASES))
def test_out_of_range_index(case):
    fn = INDEX_CASES[case]
    with pytest.raises(Exception) as cpu_error:
        fn("cpu")
    with pytest.raises(type(cpu_error.value)) as neuron_error:
        fn("neuron")
    assert type(neuron_error.value) is type(cpu_error.value)
    assert "neuron" in str(neuron_error.value), str(neuron_error.value)
    _works_after()


def test_failed_op_does_not_leak_device_memory():
    # Earlier tests leave tensors in reference cycles (pytest's saved tracebacks); collecting them first keeps
    # their frees from landing inside the measured window, which made this test order-dependent.
    gc.collect()
    torch.neuron.synchronize()
    x = torch.ones(1024, device="neuron")
    idx = torch.tensor([0, 4096], device="neuron")
    before = torch.neuron.memory_allocated()
    for _ in range(3):
        with pytest.raises(IndexError):
            torch.index_select(x, 0, idx)
    gc.collect()
    assert torch.neuron.memory_allocated() == before
