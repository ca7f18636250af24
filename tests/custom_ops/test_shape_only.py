"""Kernels launched with fake or meta tensors run shape-only: the kernel's Python computes its outputs'
shapes on zero-filled host pages (values are thrown away), nothing is allocated on the device, and hardware
checks still apply."""

from __future__ import annotations

import gc
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from tests.custom_ops import kernels
from torchneuron.nki import NkiError


def test_fake_tensors_give_fake_outputs_and_allocate_nothing_on_the_device():
    gc.collect()  # garbage of earlier tests must not be freed while we measure
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    with FakeTensorMode() as mode:
        a = mode.from_tensor(torch.empty(300, 70, device="neuron"))
        out = kernels.add_returning(a, a)
    assert isinstance(out, FakeTensor) and out.shape == (300, 70) and out.device.type == "neuron"
    assert torch.neuron.memory_allocated() == before


def test_real_tensors_allocate_their_output_on_the_device():
    a = torch.ones(300, 70, device="neuron")
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    out = kernels.add_returning(a, a)
    assert torch.neuron.memory_allocated() > before  # so the test above can fail
    assert torch.equal(out.cpu(), torch.full((300, 70), 2.0))


def test_meta_tensors_and_a_legacy_grid():
    out = kernels.legacy_rows_plus_one[3](torch.empty(384, 8, device="meta", dtype=torch.bfloat16))
    assert out.device.type == "meta" and out.shape == (384, 8) and out.dtype == torch.bfloat16


def test_a_kernel_writing_its_input_returns_nothing_and_changes_nothing():
    x = torch.empty(16, 4, device="meta")
    assert kernels.increment_in_place(x) is None


def test_hardware_checks_still_raise_shape_only():
    with pytest.raises(NkiError) as info:
        kernels.too_many_partitions(torch.empty(256, 4, device="meta"))
    assert info.value.code == "err_num_partition_exceed_arch_limit"
