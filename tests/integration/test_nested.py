"""Nested tensors on neuron (NestedTensorPrivateUse1): the TransformerEncoder fast path with a padding mask,
and torch.nested basics, each checked against the same code on the CPU."""

import copy
import warnings

import pytest
import torch
from torch import nn

import torchneuron

warnings.filterwarnings("ignore", message=".*nested tensors is in prototype stage.*")
TOL = {"rtol": 1e-5, "atol": 1e-5}


def _encoder(norm_first=False):
    torch.manual_seed(0)
    # no dropout: CPU attention draws its dropout inside the flash kernel, neuron's math path from its generator
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)


def _padded_batch():
    src = torch.randn(3, 7, 16, generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(3, 7, dtype=torch.bool)
    mask[1, 5:] = True
    mask[2, 3:] = True
    return src, mask


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_transformer_encoder_fast_path_with_padding_mask(norm_first):
    enc = _encoder(norm_first).eval()
    src, mask = _padded_batch()
    with torch.no_grad():
        expected = enc(src, src_key_padding_mask=mask)
        torchneuron.reset_executed_ops()
        got = enc.to("neuron")(src.to("neuron"), src_key_padding_mask=mask.to("neuron"))
    assert got.device.type == "neuron" and not got.is_nested
    ops = torchneuron.executed_ops()
    if not norm_first:  # the fast path turns the batch into a nested tensor and runs the fused layer on it
        assert "aten::_nested_tensor_from_mask" in ops and "aten::_transformer_encoder_layer_fwd" in ops, ops
    torch.testing.assert_close(got.cpu(), expected, **TOL)


def test_transformer_encoder_training_with_padding_mask_matches_cpu():
    enc = _encoder().train()
    src, mask = _padded_batch()
    results = []
    for device in ("cpu", "neuron"):
        torch.manual_seed(2)
        m = copy.deepcopy(enc).to(device)
        out = m(src.to(device), src_key_padding_mask=mask.to(device))
        out.masked_fill(mask.to(device)[..., None], 0).square().sum().backward()
        results.append([out.detach().cpu()] + [p.grad.cpu() for p in m.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, **TOL)


def test_multihead_attention_fast_path_with_key_padding_mask():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    src, mask = _padded_batch()
    with torch.no_grad():
        expected, _ = mha(src, src, src, key_padding_mask=mask, need_weights=False)
        got, _ = mha.to("neuron")(*(src.to("neuron"),) * 3, key_padding_mask=mask.to("neuron"), need_weights=False)
    torch.testing.assert_close(got.cpu(), expected, **TOL)


def _components():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2, 5, generator=g), torch.randn(4, 5, generator=g), torch.randn(1, 5, generator=g)]


def _same(nt: torch.Tensor, ref: torch.Tensor) -> None:
    assert nt.is_nested and nt.device.type == "neuron"
    for a, b in zip(nt.unbind(), ref.unbind()):
        assert a.device.type == "neuron"
        torch.testing.assert_close(a.cpu(), b, **TOL)


def test_nested_tensors_are_created_moved_and_read_back():
    parts = _components()
    ref = torch.nested.nested_tensor(parts)
    made = torch.nested.nested_tensor([p.to("neuron") for p in parts])
    moved = ref.to("neuron")
    _same(made, ref)
    _same(moved, ref)
    back = moved.cpu()
    assert back.is_nested and back.device.type == "cpu"
    for a, b in zip(back.unbind(), parts):
        assert torch.equal(a, b)
    assert moved.size(0) == 3 and moved.dim() == 3 and moved._nested_tensor_size().device.type == "cpu"


@pytest.mark.parametrize("fn", [
    lambda nt: nt + 1, lambda nt: nt * nt, lambda nt: nt.relu(), lambda nt: torch.tanh(nt),
    lambda nt: nt.softmax(-1), lambda nt: nt.transpose(1, 2).contiguous(), lambda nt: nt @ nt.transpose(1, 2),
    lambda nt: torch.nn.functional.linear(nt, torch.ones(3, 5, device=nt.device)),
    lambda nt: nt.clone().mul_(2), lambda nt: torch.nn.functional.layer_norm(nt, (5,), torch.ones(5, device=nt.device),
                                             torch.zeros(5, device=nt.device)),
], ids=["add", "mul", "relu", "tanh", "softmax", "transpose", "matmul", "linear", "inplace", "layer_norm"])
def test_nested_ops_match_cpu(fn):
    ref = torch.nested.nested_tensor(_components())
    _same(fn(ref.to("neuron")), fn(ref))


def test_to_padded_tensor_and_from_mask():
    ref = torch.nested.nested_tensor(_components())
    padded = ref.to("neuron").to_padded_tensor(0.0)
    assert padded.device.type == "neuron" and not padded.is_nested
    assert torch.equal(padded.cpu(), ref.to_padded_tensor(0.0))


def test_nested_autograd():
    parts = [p.requires_grad_() for p in _components()]
    grads = []
    for device in ("cpu", "neuron"):
        leaves = [p.detach().to(device).requires_grad_() for p in parts]
        nt = torch.nested.as_nested_tensor(leaves)
        (nt * 3).relu().to_padded_tensor(0.0).sum().backward()
        grads.append([leaf.grad.cpu() for leaf in leaves])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, **TOL)


def test_jagged_layout():
    parts = _components()
    ref = torch.nested.nested_tensor(parts, layout=torch.jagged)
    nt = torch.nested.nested_tensor([p.to("neuron") for p in parts], layout=torch.jagged)
    out = (nt * 2).sin()
    assert out.device.type == "neuron"
    for a, b in zip(out.unbind(), (ref * 2).sin().unbind()):
        torch.testing.assert_close(a.cpu(), b, **TOL)


def test_unsupported_nested_op_names_the_op():
    nt = torch.nested.nested_tensor(_components()).to("neuron")
    with pytest.raises(NotImplementedError, match=r"aten::.*not supported for nested tensors on the neuron device"):
        torch.ops.aten.cholesky(nt)
