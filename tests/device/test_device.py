"""Device identity, selection and properties (torch.neuron mirrors torch.cuda)."""

import pytest
import torch


def test_device_count_and_availability():
    assert torch.neuron.is_available()
    assert torch.neuron.device_count() == 4  # trn2: four logical cores at LNC=2
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == "neuron"
    assert torch.accelerator.device_count() == 4


def test_tensor_methods_and_printing(neuron):
    x = torch.arange(6.0).reshape(2, 3).neuron()
    assert x.is_neuron and x.device == neuron
    assert "device='neuron:0'" in repr(x)
    assert torch.device("neuron:1").type == "neuron"
    m = torch.nn.Linear(3, 2).neuron()
    assert all(p.is_neuron for p in m.parameters())


def test_set_device_and_guard():
    assert torch.neuron.current_device() == 0
    with torch.neuron.device(2):
        assert torch.neuron.current_device() == 2
        t = torch.empty(3, device="neuron")
        assert t.device == torch.device("neuron:2")
    assert torch.neuron.current_device() == 0
    torch.neuron.set_device("neuron:1")
    try:
        assert torch.empty(1, device="neuron").device.index == 1
    finally:
        torch.neuron.set_device(0)


def test_four_device_guard_use():
    xs = [torch.full((4,), float(i), device=f"neuron:{i}") for i in range(4)]
    for i, x in enumerate(xs):
        with torch.neuron.device_of(x):
            assert torch.neuron.current_device() == i
            y = x * 2  # runs on x's device
        assert y.device.index == i and y.sum().item() == 8.0 * i


def test_invalid_device_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"invalid device index 9.*4 neuron device"):
        torch.empty(1, device="neuron:9")


def test_properties_and_names():
    props = torch.neuron.get_device_properties(0)
    assert props.target == "trn2" and props.cores == 2
    assert props.total_memory == 24 << 30  # 96 GiB of HBM over 4 logical cores
    assert "trn2" in torch.neuron.get_device_name(0)
    assert torch.neuron.is_bf16_supported()
    assert torch.bfloat16 in torch.neuron.get_amp_supported_dtype()
    assert not torch.neuron._is_in_bad_fork()


def test_numpy_on_device_tensor_errors(neuron):
    x = torch.ones(2, device=neuron)
    with pytest.raises(TypeError, match="neuron"):
        x.numpy()


def test_torch_accelerator_api_works_with_neuron():
    assert torch.get_device_module("neuron") is torch.neuron
    with torch.accelerator.device_index(2):
        assert torch.accelerator.current_device_index() == 2
    x = torch.empty(1000, device="neuron")  # noqa: F841
    assert torch.accelerator.memory_allocated() == torch.neuron.memory_allocated()
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == torch.neuron.memory_allocated()
    free, total = torch.accelerator.get_memory_info()
    assert total == 24 << 30 and 0 < free <= total
    caps = torch.accelerator.get_device_capability()
    dtypes = caps["supported_dtypes"]
    assert torch.bfloat16 in dtypes and torch.float8_e4m3fn in dtypes and torch.qint8 not in dtypes
