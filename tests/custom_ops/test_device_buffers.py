"""An NKI kernel called with neuron tensors runs on the device buffers: zero-copy views in, outputs allocated on
the device and written there by the simulator, ordered on the current stream; CPU tensors are refused."""

from __future__ import annotations

import gc
import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torchneuron
import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from tests.custom_ops import kernels
from tests.nki.nki_test_utils import neuron_randn
from torchneuron import nki
from torchneuron.nki import NkiError, torch_io


class _AtenOps(TorchDispatchMode):
    """Every ATen op dispatched while active (a copy to or from the CPU would show up as _to_copy / copy_)."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_inputs_are_read_and_written_in_place_without_copies():
    x = neuron_randn(128, 64)
    expected = x.cpu() + 1
    ptr = x.data_ptr()
    with _AtenOps() as seen:
        kernels.increment_in_place(x)
    assert not [op for op in seen.ops if "copy" in op], seen.ops
    assert x.data_ptr() == ptr
    torch.testing.assert_close(x.cpu(), expected)


def test_outputs_are_device_tensors_the_simulator_wrote(monkeypatch):
    written = []
    original = torch_io.TorchIO.hbm_data

    def spy(self, shape, dt):
        flat = original(self, shape, dt)
        written.append(flat.ctypes.data)
        return flat

    monkeypatch.setattr(torch_io.TorchIO, "hbm_data", spy)
    a, b = neuron_randn(256, 512), neuron_randn(256, 512, seed=1)
    gc.collect()  # garbage of earlier tests must not be freed while we measure
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    with _AtenOps() as seen:
        out = kernels.add_returning(a, b)
    assert out.device == a.device and out.dtype == torch.float32
    assert torch.neuron.memory_allocated() - before == 256 * 512 * 4  # exactly the output, nothing staged
    assert written == [torchneuron._C._host_view(out).data_ptr()]    # the very buffer the simulator wrote
    assert [op for op in seen.ops if "copy" in op] == []
    torch.testing.assert_close(out.cpu(), a.cpu() + b.cpu())


def test_queued_work_lands_before_the_kernel_reads():
    host = torch.arange(128 * 32, dtype=torch.float32).reshape(128, 32).pin_memory()
    x = host.to("neuron", non_blocking=True)   # an async copy on the current stream
    y = x * 3                                  # queued behind it
    out = kernels.add_returning(y, y)
    torch.testing.assert_close(out.cpu(), host * 6)


def test_the_kernels_results_are_seen_by_later_device_ops():
    x = neuron_randn(64, 16)
    expected = x.cpu() + 1
    kernels.increment_in_place(x)
    torch.testing.assert_close((x * 2).cpu(), expected * 2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2])
def test_narrow_dtypes_map_through_ml_dtypes_bit_exactly(dtype):
    x = torch.randn(128, 16).to(dtype)
    out = torch.empty(128, 16, dtype=dtype, device="neuron")
    src = x.to("neuron")
    kernels.copy_into(src, out)
    assert out.dtype == dtype
    assert torch.equal(out.cpu().view(torch.uint8) if dtype.itemsize == 1 else out.cpu().view(torch.int16),
                       x.view(torch.uint8) if dtype.itemsize == 1 else x.view(torch.int16))


def test_a_strided_view_is_read_and_written_through():
    base = neuron_randn(64, 128)
    view = base.t()[:, :32]            # non-contiguous: the simulator works on a copy and writes it back
    expected = base.cpu().t()[:, :32] + 1
    kernels.increment_in_place(view)
    torch.testing.assert_close(base.cpu().t()[:, :32], expected)


def test_mixing_cpu_and_neuron_tensors_is_refused_naming_the_device():
    with pytest.raises(NkiError, match=r"argument b \(4, 4\) is a cpu tensor, but NKI kernels run on neuron "
                                       r"device neuron:0.*b.to\('neuron:0'\)") as info:
        kernels.add_returning(neuron_randn(4, 4), torch.ones(4, 4))
    assert info.value.code == "err_unsupported_memory"


def test_cpu_only_calls_still_use_the_standalone_simulator():
    a = torch.randn(130, 8)
    out = kernels.add_returning(a, a)
    assert out.device.type == "cpu"
    torch.testing.assert_close(out, 2 * a)
    np.testing.assert_allclose(kernels.add_returning(a.numpy(), a.numpy()), 2 * a.numpy())


def test_float64_is_refused_with_the_nki_dtype_error():
    with pytest.raises(NkiError) as info:
        kernels.add_returning(neuron_randn(4, 4).double(), neuron_randn(4, 4).double())
    assert info.value.code == "err_unsupported_dtype"


def test_tensors_on_two_devices_are_refused():
    if torch.neuron.device_count() < 2:
        pytest.skip("one simulated device")
    with pytest.raises(NkiError, match="one launch runs on one NeuronCore"):
        kernels.add_returning(neuron_randn(4, 4), neuron_randn(4, 4).to("neuron:1"))


def test_the_kernel_object_does_not_keep_its_outputs_alive():
    a = neuron_randn(128, 256)
    gc.collect()
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    out = kernels.add_returning(a, a)
    assert torch.neuron.memory_allocated() > before
    del out
    assert torch.neuron.memory_allocated() == before
    assert kernels.add_returning.report is not None  # the cost report stays


@nki.jit
def whole_and_half(x):
    """The output and a view of half of it, as the kernel's results."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out, out[0:x.shape[0] // 2, :]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_returned_tiles_are_the_output_or_a_copy_of_part_of_it(dtype):
    x = neuron_randn(64, 32, dtype=dtype)
    gc.collect()
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    for _ in range(2):  # the checked launch, then a repeat of its signature
        whole, half = whole_and_half(x)
        assert torch.equal(whole.cpu(), x.cpu()) and torch.equal(half.cpu(), x.cpu()[:32])
        assert half.data_ptr() != whole.data_ptr()  # part of an output: a tensor of its own
        # the output is the memory the kernel wrote, returned as it is; only the half is a copy
        assert torch.neuron.memory_allocated() - before == 64 * 32 * x.element_size() * 3 // 2
        del whole, half
