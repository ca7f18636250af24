"""Every kernel torchneuron registers itself for neuron works under FakeTensorMode (what Dynamo, AOTAutograd and
torch.export trace with): fake tensors in, fake neuron tensors out with the real result's metadata, and no
device memory touched (a real tensor inside the mode is an error, so host aliasing would fail loudly here)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

aten = torch.ops.aten
N = "neuron"


def _x(*shape, **kw):
    return torch.randn(*shape, device=N, **kw)


def _conv_args():
    return (_x(2, 3, 8, 8), _x(4, 3, 3, 3), _x(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1)


def _attention_args():
    q = _x(2, 4, 8, 16)
    return q, _x(2, 4, 8, 16), _x(2, 4, 8, 16)


def _attention_backward_args():
    q, k, v = _attention_args()
    out = aten._scaled_dot_product_fused_attention_overrideable(q, k, v, None, 0.0, True, False)
    return (torch.randn_like(out[0]), q, k, v, torch.empty(0, device=N), [True, True, True, False], out[0], out[1],
            out[2], out[3], 8, 8, 0.0, True, out[6], out[7])


# (name, builder of the argument tuple, function under test)
CASES = [
    ("empty.memory_format", lambda: (), lambda: torch.empty(2, 3, device=N)),
    ("empty_strided", lambda: (), lambda: torch.empty_strided((2, 3), (1, 2), device=N)),
    ("as_strided", lambda: (_x(6),), lambda x: x.as_strided((2, 2), (1, 2), 1)),
    ("view", lambda: (_x(2, 3),), lambda x: x.view(3, 2)),
    ("_reshape_alias", lambda: (_x(2, 3),), lambda x: aten._reshape_alias(x, [3, 2], [2, 1])),
    ("resize_", lambda: (_x(2, 3),), lambda x: x.resize_(4, 5)),
    ("set_.source_Storage_storage_offset", lambda: (_x(6), _x(1)),
     lambda x, t: t.set_(x.untyped_storage(), 0, (2, 2), (2, 1))),
    ("set_.source_Tensor", lambda: (_x(6), _x(1)), lambda x, t: t.set_(x)),
    ("set_", lambda: (_x(3),), lambda t: t.set_()),
    ("_copy_from", lambda: (_x(2, 3), _x(2, 3)), lambda a, b: a.copy_(b)),
    ("_copy_from (from cpu)", lambda: (_x(2, 3), torch.randn(2, 3)), lambda a, b: a.copy_(b)),
    ("_copy_from_and_resize", lambda: (_x(2, 3), _x(0)), lambda a, b: aten._copy_from_and_resize(a, b)),
    ("native_dropout", lambda: (_x(4, 5),), lambda x: aten.native_dropout(x, 0.3, True)),
    ("convolution_overrideable", _conv_args, lambda *a: aten.convolution_overrideable(*a)),
    ("convolution_backward_overrideable", lambda: (_x(2, 4, 8, 8),) + _conv_args()[:2],
     lambda g, i, w: aten.convolution_backward_overrideable(g, i, w, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                            [True, True, True])),
    ("_scaled_dot_product_fused_attention_overrideable", _attention_args,
     lambda q, k, v: aten._scaled_dot_product_fused_attention_overrideable(q, k, v, None, 0.0, True, False)),
    # the bias gradient is not asked for (grad_input_mask[3]): the kernel leaves it undefined, PyTorch's meta
    # function allocates a placeholder; the gradients both compute are compared
    ("_scaled_dot_product_fused_attention_overrideable_backward", _attention_backward_args,
     lambda *a: aten._scaled_dot_product_fused_attention_overrideable_backward(*a)[:3]),
    ("_fused_sdp_choice (scaled_dot_product_attention)", _attention_args,
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ("_fused_sdp_choice with a mask", lambda: _attention_args() + (_x(8, 8) > 0,),
     lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
    ("unboxed host kernel (addmm)", lambda: (_x(3), _x(2, 4), _x(4, 3)), lambda b, x, y: torch.addmm(b, x, y)),
    ("boxed host kernel (cumsum)", lambda: (_x(3, 4),), lambda x: x.cumsum(1)),
]


def _leaves(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _leaves(o)]
    return []


@pytest.mark.parametrize("name,build,fn", CASES, ids=[c[0] for c in CASES])
def test_kernel_under_fake_tensor_mode(name, build, fn):
    args = build()
    real = _leaves(fn(*[a.clone() if isinstance(a, torch.Tensor) and a.numel() else a for a in args]))
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        fake = _leaves(fn(*fakes))
    assert len(fake) == len(real)
    for f, r in zip(fake, real):
        if f.device.type == "meta":
            continue  # PyTorch's meta function for fused attention puts the philox seed/offset on meta
        assert isinstance(f, FakeTensor), f"{name} returned a real tensor under FakeTensorMode"
        assert f.device == r.device, name
        assert (f.shape, f.dtype) == (r.shape, r.dtype), name
        if r.numel() > 1 and r.is_contiguous():
            assert f.is_contiguous(), name


def test_item_under_fake_mode_is_data_dependent_as_on_cpu():
    from torch._subclasses.fake_tensor import DataDependentOutputException

    with FakeTensorMode() as mode, pytest.raises(DataDependentOutputException):
        mode.from_tensor(_x(3)).sum().item()


def test_record_stream_under_fake_mode():
    with FakeTensorMode() as mode:
        mode.from_tensor(_x(3)).record_stream(torch.neuron.current_stream())


def test_kernels_under_meta_device_trace_like_cpu():
    # torch.export and Dynamo also run meta: the SDPA path on a meta tensor must not reach the neuron kernels
    q = torch.randn(2, 4, 8, 16, device="meta")
    assert F.scaled_dot_product_attention(q, q, q).shape == q.shape
