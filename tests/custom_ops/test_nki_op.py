"""`torchneuron.nki_op`: a function that launches NKI kernels, registered as a torch custom op (AWS's surface)."""

from __future__ import annotations

import pytest
import torch

import torchneuron
from tests.custom_ops import kernels
from tests.custom_ops.opcheck import opcheck
from tests.nki.nki_test_utils import neuron_randn
from torchneuron.nki import NkiError


@torchneuron.nki_op("tn_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    kernels.scale_into(x, out)
    return out


@torchneuron.nki_op("tn_test::add", mutates_args=())
def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return kernels.add_returning(a, b)


@torchneuron.nki_op("tn_test::legacy_plus_one", mutates_args=())
def legacy_plus_one(x: torch.Tensor) -> torch.Tensor:
    return kernels.legacy_rows_plus_one[x.shape[0] // 128](x)


@torchneuron.nki_op("tn_test::increment_", mutates_args=("x",))
def increment_(x: torch.Tensor) -> None:
    kernels.increment_in_place(x)


def test_the_op_is_registered_under_torch_ops_and_runs_on_the_device():
    x = neuron_randn(128, 64)
    y = torch.ops.tn_test.scale(x)
    assert y.device == x.device and y.shape == x.shape and y.dtype == x.dtype
    torch.testing.assert_close(y.cpu(), 2 * x.cpu(), rtol=0, atol=0)
    assert scale(x).device.type == "neuron"  # the returned CustomOpDef is callable too
    assert isinstance(scale, torch._library.custom_ops.CustomOpDef)


@pytest.mark.parametrize("rows", [1, 127, 128, 300])
def test_a_kernel_that_returns_its_output(rows):
    a, b = neuron_randn(rows, 33), neuron_randn(rows, 33) * 3
    torch.testing.assert_close(add(a, b).cpu(), a.cpu() + b.cpu())


def test_legacy_kernel_with_a_grid():
    x = neuron_randn(384, 16)
    torch.testing.assert_close(legacy_plus_one(x).cpu(), x.cpu() + 1)


def test_bf16_and_fp16_keep_their_dtype():
    for dt in (torch.bfloat16, torch.float16):
        a, b = neuron_randn(130, 20, dtype=dt), neuron_randn(130, 20, dtype=dt)
        y = add(a, b)
        assert y.dtype == dt
        torch.testing.assert_close(y.cpu(), (a.cpu().float() + b.cpu().float()).to(dt))


def test_mutating_op_writes_the_callers_tensor():
    x = neuron_randn(64, 8)
    before = x.cpu().clone()
    ptr = x.data_ptr()
    assert increment_(x) is None
    assert x.data_ptr() == ptr
    torch.testing.assert_close(x.cpu(), before + 1)


def test_opcheck_passes_for_functional_and_mutating_ops():
    x = neuron_randn(128, 16)
    for op, args in ((torch.ops.tn_test.scale.default, (x,)), (torch.ops.tn_test.add.default, (x, x * 2)),
                     (torch.ops.tn_test.legacy_plus_one.default, (neuron_randn(256, 8),)),
                     (torch.ops.tn_test.increment_.default, (x.clone(),))):
        opcheck(op, args)


def test_cpu_tensors_are_refused_naming_the_device():
    with pytest.raises(RuntimeError, match=r"tn_test::add: argument 'b' \(4, 4\) torch.float32 is on cpu.*"
                                           r"neuron device.*b.to\('neuron'\)"):
        add(neuron_randn(4, 4), torch.randn(4, 4))


def test_cpu_tensor_made_inside_the_op_is_refused_by_the_kernel():
    @torchneuron.nki_op("tn_test::sneaky_cpu", mutates_args=())
    def sneaky(x: torch.Tensor) -> torch.Tensor:
        return kernels.add_returning(x, torch.ones(x.shape))  # a CPU tensor reaches the kernel

    with pytest.raises(NkiError, match=r"add_returning \(called through torchneuron.nki_op 'tn_test::sneaky_cpu'\): "
                                       r"argument b \(8, 4\) is a cpu tensor.*neuron:0.*b.to\('neuron:0'\)") as info:
        sneaky(neuron_randn(8, 4))
    assert info.value.code == "err_unsupported_memory"


def test_fake_and_meta_tensors_give_shapes_without_running():
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    with FakeTensorMode() as mode:
        a = mode.from_tensor(neuron_randn(300, 40, dtype=torch.bfloat16))
        y = add(a, a)
        assert isinstance(y, FakeTensor) and y.shape == (300, 40) and y.dtype == torch.bfloat16
        assert y.device.type == "neuron"
    m = torch.empty(256, 8, device="meta")
    assert legacy_plus_one(m).shape == (256, 8) and legacy_plus_one(m).device.type == "meta"


def test_kernel_errors_surface_with_their_nki_name_in_eager_and_fake_mode():
    @torchneuron.nki_op("tn_test::bad", mutates_args=())
    def bad(x: torch.Tensor) -> torch.Tensor:
        return kernels.too_many_partitions(x)

    with pytest.raises(NkiError) as eager:
        bad(neuron_randn(256, 4))
    assert eager.value.code == "err_num_partition_exceed_arch_limit"
    with pytest.raises(NkiError) as meta:
        bad(torch.empty(256, 4, device="meta"))
    assert meta.value.code == "err_num_partition_exceed_arch_limit"


def test_register_autograd_trains_through_the_op():
    @torchneuron.nki_op("tn_test::scale_grad", mutates_args=())
    def scale_grad(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        kernels.scale_into(x, out)
        return out

    scale_grad.register_autograd(lambda ctx, g: scale_grad(g), setup_context=lambda ctx, inputs, output: None)
    x = neuron_randn(16, 8).requires_grad_()
    scale_grad(x).sum().backward()
    torch.testing.assert_close(x.grad.cpu(), torch.full((16, 8), 2.0))
    opcheck(torch.ops.tn_test.scale_grad.default, (x.detach().requires_grad_(),))


def test_register_fake_replaces_the_traced_fake():
    calls = []

    @torchneuron.nki_op("tn_test::custom_fake", mutates_args=())
    def custom_fake(x: torch.Tensor) -> torch.Tensor:
        return kernels.add_returning(x, x)

    @custom_fake.register_fake
    def _(x):
        calls.append(x.shape)
        return torch.empty_like(x)

    assert custom_fake(torch.empty(4, 4, device="meta")).shape == (4, 4)
    assert calls == [(4, 4)]


def test_mutates_args_must_be_names():
    with pytest.raises(TypeError, match="mutates_args must be a tuple"):
        torchneuron.nki_op("tn_test::wrong", mutates_args="x")(lambda x: None)


def test_export_keeps_the_op_as_one_node():
    class M(torch.nn.Module):
        def forward(self, a, b):
            return add(a.relu(), b) * 2

    ep = torch.export.export(M(), (neuron_randn(130, 8), neuron_randn(130, 8)))
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.tn_test.add.default in targets
    a, b = neuron_randn(130, 8), neuron_randn(130, 8)
    torch.testing.assert_close(ep.module()(a, b).cpu(), ((a.relu() + b) * 2).cpu())
