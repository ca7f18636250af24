"""The unboxed host kernels (csrc/aten/native/HostKernel.h) behave exactly like the boxed host kernel they speed
up: same values, in-place identity, out= resizing, aliasing, device checks, float64 emulation, op counts."""

import warnings

import pytest
import torch

import torchneuron


def _pair(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g).to(dtype)
    return x, x.to("neuron")


def test_functional_inplace_and_out_forms_match_cpu():
    (a, na), (b, nb) = _pair(5, 7), _pair(5, 7, seed=1)
    assert torch.equal(torch.add(na, nb, alpha=2).cpu(), torch.add(a, b, alpha=2))
    assert torch.equal(torch.div(na, nb, rounding_mode="floor").cpu(), torch.div(a, b, rounding_mode="floor"))
    ret = na.mul_(nb)
    assert ret is na and torch.equal(na.cpu(), a.mul_(b))
    out = torch.empty(0, device="neuron")  # out= resizes the neuron tensor, as on the CPU
    res = torch.sub(na, nb, out=out)
    assert res is out and out.shape == (5, 7) and torch.equal(out.cpu(), torch.sub(a, b))


def test_same_tensor_twice_keeps_its_aliasing():
    a, na = _pair(4, 4)
    na.add_(na)
    assert torch.equal(na.cpu(), a.add_(a))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(1, 4, device="neuron").add_(torch.ones(4, 4, device="neuron"))


def test_fresh_results_live_on_the_inputs_device_and_keep_dispatching_there():
    a = torch.randn(8, 8, device="neuron:1")
    y = a + 1
    assert y.device == torch.device("neuron:1") and y.is_contiguous()
    with torch.autocast("neuron", dtype=torch.bfloat16):  # the autocast key moved with the backend key
        assert (y @ y).dtype == torch.bfloat16
    assert y.untyped_storage().device == torch.device("neuron:1")


def test_lists_optionals_and_tuples():
    xs = [_pair(3, 4, seed=s) for s in range(3)]
    cpu, dev = [x for x, _ in xs], [d for _, d in xs]
    assert torch.equal(torch.cat(dev, 1).cpu(), torch.cat(cpu, 1))
    torch._foreach_add_(dev, dev, alpha=0.5)
    torch._foreach_add_(cpu, cpu, alpha=0.5)
    assert all(torch.equal(d.cpu(), c) for d, c in zip(dev, cpu))
    # running statistics are written in place through optional tensors
    x, nx = _pair(6, 3)
    rm, rv = torch.zeros(3), torch.ones(3)
    nrm, nrv = rm.to("neuron"), rv.to("neuron")
    out = torch.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    nout = torch.native_batch_norm(nx, None, None, nrm, nrv, True, 0.1, 1e-5)
    assert all(torch.equal(n.cpu(), c) for n, c in zip(nout, out))
    assert torch.equal(nrm.cpu(), rm) and torch.equal(nrv.cpu(), rv)


def test_lazy_conjugate_inputs_are_honoured():
    z = torch.randn(4, dtype=torch.complex64)
    w = torch.randn(4, dtype=torch.complex64)
    assert torch.equal(torch.mul(z.to("neuron").conj(), w.to("neuron")).cpu(), torch.mul(z.conj(), w))


def test_device_errors_name_op_device_and_argument():
    a = torch.randn(3, 3, device="neuron:0")
    with pytest.raises(RuntimeError, match=r"aten::mm: argument 'self' is on neuron:0, argument 'mat2' on neuron:1"):
        torch.mm(a, torch.randn(3, 3, device="neuron:1"))
    with pytest.raises(RuntimeError, match=r"argument 'other' with shape \[3, 3\] is on cpu"):
        torch.add(a, torch.randn(3, 3))
    assert torch.equal(torch.mul(a, torch.tensor(2.0)).cpu(), a.cpu() * 2)  # 0-dim host scalars are fine


def test_float64_still_goes_through_emulation(monkeypatch):
    x = torch.tensor([1.0 + 2.0**-40], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = torch.mul(x.to("neuron"), torch.ones(1, dtype=torch.float64, device="neuron"))
    assert y.dtype == torch.float64
    assert y.item() == 1.0  # computed in float32, as on NeuronCores


def test_executed_ops_counts_unboxed_kernels():
    a = torch.randn(2, 2, device="neuron")
    torch.neuron.synchronize()
    torchneuron.reset_executed_ops()
    for _ in range(3):
        torch.mm(a, a)
    assert torchneuron.executed_ops().get("aten::mm") == 3


def test_generic_kernels_that_only_work_on_host_tensors_run_on_aliases():
    """mode.values' only kernel refuses devices other than CPU/CUDA/XPU before dispatching; on host aliases it
    runs as on the CPU."""
    x = torch.randint(0, 4, (5, 7)).float()
    values, indices = torch.empty(0, device="neuron"), torch.empty(0, dtype=torch.long, device="neuron")
    torch.mode(x.to("neuron"), 1, out=(values, indices))
    expected = torch.mode(x, 1)
    assert torch.equal(values.cpu(), expected.values) and torch.equal(indices.cpu(), expected.indices)


def test_advanced_indexing_takes_index_lists_as_the_boxed_path_does():
    x, nx = _pair(5, 6, 7)
    i = torch.tensor([4, 0, 2])
    j = torch.tensor([1, 1, 5])
    mask = torch.tensor([True, False, True, True, False, False])
    for idx in ((i,), (slice(None), j), (i, j), (Ellipsis, j), (slice(None), mask), (i, slice(None), j)):
        expected = x[idx]
        dev = tuple(t.to("neuron") if isinstance(t, torch.Tensor) else t for t in idx)
        assert torch.equal(nx[dev].cpu(), expected)
        assert torch.equal(nx[idx].cpu(), expected)  # indices may stay on the host, as on CUDA
    assert torch.equal(torch.ops.aten.index.Tensor(nx, [None, j.to("neuron")]).cpu(), x[:, j])
    on_two = r"aten::index.Tensor: argument 'self' is on neuron:0, argument 'indices' on neuron:1"
    with pytest.raises(RuntimeError, match=on_two):
        torch.ops.aten.index.Tensor(nx, [i.to("neuron:1")])
    with pytest.raises(IndexError, match="out of bounds"):
        nx[torch.tensor([9], device="neuron")]
    torchneuron.reset_executed_ops()
    nx[i.to("neuron")]
    assert torchneuron.executed_ops().get("aten::index.Tensor") == 1
