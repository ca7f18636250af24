"""`nki_ops.patch(model)`: the GPT-style training model (torchneuron/testing/models.py) on the NKI kernels matches the
unpatched model, eager and compiled, and trains the same way; `unpatch` restores it exactly."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import nki_ops
from torchneuron.testing.models import GPT

# GPT(): 2 blocks x (ln1, qkv, proj, ln2, mlp.0, mlp.2) + ln + head, and the model for its attention calls
GPT_SWAPS = 2 * 6 + 2 + 1


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _batch(seed=0):
    tokens = torch.randint(0, 64, (4, 17), generator=torch.Generator().manual_seed(seed))
    return tokens[:, :-1].to("neuron"), tokens[:, 1:].to("neuron")


def _pair(dtype=torch.float32):
    torch.manual_seed(0)
    model = GPT().to("neuron", dtype)
    patched = copy.deepcopy(model)
    assert nki_ops.patch(patched) == GPT_SWAPS
    return model, patched


def _loss_and_grads(model, x, y):
    model.zero_grad(set_to_none=True)
    _, loss = model(x, y)
    loss.backward()
    return loss.detach().cpu(), {n.removeprefix("_orig_mod."): p.grad.detach().cpu().float()
                                 for n, p in model.named_parameters()}


def _assert_match(a, b, rtol, atol):
    (la, ga), (lb, gb) = a, b
    torch.testing.assert_close(la.float(), lb.float(), rtol=rtol, atol=atol)
    assert ga.keys() == gb.keys()
    for name in ga:
        torch.testing.assert_close(ga[name], gb[name], rtol=rtol, atol=atol, msg=lambda m, n=name: f"{n}: {m}")


def test_patch_swaps_the_layers_and_unpatch_restores_them_exactly():
    model = GPT()
    own = model.blocks[0].ln1.forward = lambda x: x  # an instance-level forward patch must survive
    keys = list(model.state_dict())
    assert nki_ops.patch(model) == GPT_SWAPS
    assert nki_ops.patch(model) == 0  # idempotent
    assert list(model.state_dict()) == keys and type(model.blocks[0].qkv) is nn.Linear
    assert nki_ops.unpatch(model) == GPT_SWAPS
    assert model.blocks[0].ln1.__dict__["forward"] is own
    del model.blocks[0].ln1.forward
    assert all("forward" not in m.__dict__ and not hasattr(m, "_nki_ops_patch") for m in model.modules())
    assert nki_ops.unpatch(model) == 0


def test_the_patched_model_calls_the_nki_ops():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.add(func._schema.name)
            return func(*args, **(kwargs or {}))

    _, patched = _pair()
    x, y = _batch()
    with Ops() as ops:
        patched(x, y)[1].backward()
    assert {"nki_ops::layernorm_fwd", "nki_ops::linear", "nki_ops::causal_attention", "nki_ops::linear_backward",
            "nki_ops::layernorm_backward", "nki_ops::causal_attention_backward"} <= ops.seen
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" not in ops.seen


def test_eager_fp32_forward_and_backward_match():
    model, patched = _pair()
    x, y = _batch()
    _assert_match(_loss_and_grads(patched, x, y), _loss_and_grads(model, x, y), rtol=1e-4, atol=1e-5)


def test_eager_bf16_forward_and_backward_match():
    model, patched = _pair(torch.bfloat16)
    x, y = _batch()
    _assert_match(_loss_and_grads(patched, x, y), _loss_and_grads(model, x, y), rtol=2e-2, atol=2e-2)


def test_autocast_bf16_follows_autocast_policy():
    model, patched = _pair()
    x, y = _batch()
    with torch.autocast("neuron", dtype=torch.bfloat16):
        a, b = _loss_and_grads(patched, x, y), _loss_and_grads(model, x, y)
    _assert_match(a, b, rtol=2e-2, atol=2e-2)


def test_compiled_forward_and_backward_match_eager_unpatched():
    import torch._dynamo

    torch._dynamo.reset()
    model, patched = _pair()
    x, y = _batch()
    compiled = torch.compile(patched, backend="neuron")
    _assert_match(_loss_and_grads(compiled, x, y), _loss_and_grads(model, x, y), rtol=1e-4, atol=1e-5)
    assert torch.neuron.get_dynamo_metrics()["fallback_ops"] == {}
    torch._dynamo.reset()


def _train(model, steps, seed=0):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    batches = [_batch(seed), _batch(seed + 1)]
    losses = []
    for i in range(steps):
        x, y = batches[i % 2]
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return torch.tensor(losses)


def test_twenty_training_steps_converge_the_same_way():
    model, patched = _pair()
    a, b = _train(patched, 20), _train(model, 20)
    assert b[-1] < 0.8 * b[0]
    torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_twenty_compiled_training_steps_converge_the_same_way():
    import torch._dynamo

    torch._dynamo.reset()
    model, patched = _pair()
    a, b = _train(torch.compile(patched, backend="neuron"), 20), _train(model, 20)
    torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)
    torch._dynamo.reset()


def test_inputs_the_kernels_do_not_take_use_the_original_forward():
    model = GPT()  # on the CPU: every patched layer falls back
    ref = copy.deepcopy(model)
    nki_ops.patch(model)
    tokens = torch.randint(0, 64, (2, 9))
    torch.testing.assert_close(model(tokens), ref(tokens))
    attn = nn.MultiheadAttention(16, 2, batch_first=True).to("neuron")  # non-causal: stays on SDPA
    x = torch.randn(2, 5, 16, device="neuron")
    expected = attn(x, x, x)[0]
    nki_ops.patch(attn)
    torch.testing.assert_close(attn(x, x, x)[0].cpu(), expected.cpu(), rtol=1e-4, atol=1e-5)


def test_softmax_and_rmsnorm_modules():
    seq = nn.Sequential(nn.Linear(12, 12), nn.RMSNorm(12), nn.Softmax(dim=-1)).to("neuron")
    x = torch.randn(5, 12, device="neuron")
    expected = seq(x)
    assert nki_ops.patch(seq) == 4  # linear, rmsnorm, softmax, and the model's attention calls
    torch.testing.assert_close(seq(x).cpu(), expected.cpu(), rtol=1e-4, atol=1e-5)


def test_hugging_face_llama_tiny():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32,
                                      attn_implementation="sdpa")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("neuron").eval()
    patched = copy.deepcopy(model)
    # per layer: 2 RMSNorms + q, k, v, o + gate, up, down; the final norm, lm_head, and the model
    assert nki_ops.patch(patched) == 2 * 9 + 2 + 1
    tokens = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(1)).to("neuron")
    ref = model(tokens, labels=tokens)
    out = patched(tokens, labels=tokens)
    torch.testing.assert_close(out.logits.cpu(), ref.logits.cpu(), rtol=1e-4, atol=1e-4)
    out.loss.backward()
    ref.loss.backward()
    for (name, p), q in zip(patched.named_parameters(), model.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad.cpu(), rtol=1e-3, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")


def test_functional_sdpa_through_the_patched_model():
    class Attn(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    q = torch.randn(2, 3, 10, 8, device="neuron")
    m = Attn()
    expected = m(q, q, q)
    assert nki_ops.patch(m) == 1
    torch.testing.assert_close(m(q, q, q).cpu(), expected.cpu(), rtol=1e-4, atol=1e-5)
