"""Copies between host and device and between devices; dtype conversion; views share storage."""

import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.float8_e4m3fn])
def test_round_trip(dtype):
    x = (torch.randn(33, 17) * 10).to(dtype)
    assert torch.equal(x.to("neuron").cpu().view(torch.uint8), x.view(torch.uint8))


def test_cross_device_copies():
    x = torch.randn(64, 64)
    d0 = x.to("neuron:0")
    d3 = d0.to("neuron:3")
    assert d3.device == torch.device("neuron:3")
    back = d3.to("neuron:1").to("neuron:0")
    assert torch.equal(back.cpu(), x)


def test_conversion_and_strided_copies():
    x = torch.randn(8, 6)
    d = x.to("neuron")
    assert torch.equal(d.t().contiguous().cpu(), x.t().contiguous())
    assert torch.equal(d.to(torch.float16).cpu(), x.to(torch.float16))
    out = torch.zeros(6, 8, device="neuron")
    out.copy_(x.t())
    assert torch.equal(out.cpu(), x.t())
    sliced = d[:, ::2]
    assert torch.equal(sliced.cpu(), x[:, ::2])


def test_views_share_storage():
    d = torch.arange(12.0, device="neuron")
    v = d.view(3, 4)
    assert v.data_ptr() == d.data_ptr()
    e = d[None].expand(5, 12)
    assert e.data_ptr() == d.data_ptr() and e.stride(0) == 0
    v[0, 0] = 42.0
    assert d[0].item() == 42.0


def test_resize_and_set():
    d = torch.empty(0, device="neuron")
    d.resize_(10)
    assert d.untyped_storage().nbytes() >= 40
    src = torch.arange(5.0, device="neuron")
    d.set_(src)
    assert d.data_ptr() == src.data_ptr() and torch.equal(d.cpu(), torch.arange(5.0))
    s = src.untyped_storage()
    assert s.device.type == "neuron"
    s.resize_(64)
    assert s.nbytes() == 64


def test_item_and_in_place_ops():
    d = torch.zeros(3, device="neuron")
    d.add_(2).mul_(3)
    assert d.sum().item() == 18.0
    assert isinstance(d[0].item(), float)


def test_functional_outputs_are_device_memory_without_copies():
    a = torch.randn(256, 256, device="neuron")
    before = torch.neuron.memory_stats()["allocation.all.allocated"]
    b = torch.nn.functional.relu(a)
    after = torch.neuron.memory_stats()["allocation.all.allocated"]
    assert b.device.type == "neuron" and after > before  # the result was allocated on the device
    assert torch.equal(b.cpu(), torch.relu(a.cpu()))


def test_conjugated_and_complex_results_copy_back():
    a, b = torch.randn(8), torch.randn(8)
    p = torch.polar(a.abs().to("neuron"), b.to("neuron"))
    assert torch.allclose(p.cpu(), torch.polar(a.abs(), b))
    z = torch.randn(6, dtype=torch.complex64)
    zc = z.to("neuron").conj()  # lazily conjugated view
    assert zc.is_conj() and torch.equal(zc.cpu(), z.conj())
    assert torch.allclose(torch.fft.ifft(a.to("neuron")).cpu(), torch.fft.ifft(a))


def test_host_results_keep_their_lazy_conjugation():
    """vdot(a, b.conj()) ends in .conj() of a fresh result; dropping the bit returned the conjugate."""
    a, b = torch.randn(5, dtype=torch.complex64), torch.randn(5, dtype=torch.complex64)
    na, nb = a.to("neuron"), b.to("neuron")
    for fn in (lambda x, y: torch.vdot(x, y.conj()), lambda x, y: torch.vdot(x.conj(), y),
               lambda x, y: torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.eye(5, dtype=x.dtype, device=x.device)
                                                                           + x.outer(y)), y.unsqueeze(-1),
                                                  adjoint=True)):
        torch.testing.assert_close(fn(na, nb).cpu(), fn(a, b))
