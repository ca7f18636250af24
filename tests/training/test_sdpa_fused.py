"""scaled_dot_product_attention on neuron takes the CPU's fused flash kernel where the CPU would (exact
agreement, forward and backward), and ATen's math path where that kernel cannot serve (dropout, a mask that
needs a gradient)."""

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("torchneuron")


def _qkv(dtype=torch.float32):
    torch.manual_seed(0)
    cpu = [torch.randn(2, 4, 16, 8, dtype=dtype, requires_grad=True) for _ in range(3)]
    dev = [t.detach().to("neuron").requires_grad_() for t in cpu]
    return cpu, dev


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kwargs", [{"is_causal": True}, {}, {"scale": 0.3}])
def test_fused_attention_matches_cpu_exactly(dtype, kwargs):
    import torchneuron

    (q, k, v), (nq, nk, nv) = _qkv(dtype)
    torchneuron.reset_executed_ops()
    out, nout = F.scaled_dot_product_attention(q, k, v, **kwargs), F.scaled_dot_product_attention(nq, nk, nv, **kwargs)
    assert torch.equal(out, nout.cpu())
    grad = torch.randn_like(out)
    out.backward(grad)
    nout.backward(grad.to("neuron"))
    for a, b in ((q, nq), (k, nk), (v, nv)):
        assert torch.equal(a.grad, b.grad.cpu())
    ran = torchneuron.executed_ops()
    assert ran.get("aten::_scaled_dot_product_flash_attention_for_cpu") == 1
    assert ran.get("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == 1


def test_mask_with_gradient_takes_the_math_path():
    (q, k, v), (nq, nk, nv) = _qkv()
    mask = torch.randn(16, 16, requires_grad=True)
    nmask = mask.detach().to("neuron").requires_grad_()
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
    F.scaled_dot_product_attention(nq, nk, nv, attn_mask=nmask).sum().backward()
    torch.testing.assert_close(nmask.grad.cpu(), mask.grad)
    torch.testing.assert_close(nq.grad.cpu(), q.grad)


def test_dropout_draws_from_the_neuron_generator():
    (_, _, _), (nq, nk, nv) = _qkv()
    torch.neuron.manual_seed(3)
    a = F.scaled_dot_product_attention(nq, nk, nv, dropout_p=0.5)
    torch.neuron.manual_seed(3)
    b = F.scaled_dot_product_attention(nq, nk, nv, dropout_p=0.5)
    torch.manual_seed(3)
    assert torch.equal(a.cpu(), b.cpu())
    assert not torch.equal(a.cpu(), F.scaled_dot_product_attention(nq, nk, nv).cpu())
