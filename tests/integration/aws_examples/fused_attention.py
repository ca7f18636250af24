import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's fused_attention example, as a TorchNeuron user writes it: scaled dot-product attention on
# device='neuron' (PyTorch's SDPA, the device's fused attention selected with SDPBackend.OVERRIDEABLE, and
# nn.MultiheadAttention), and an attention kernel written in NKI, registered as a PyTorch op with
# torch_neuronx.nki_op / wrap_nki (with a backward, so it trains), called eagerly and inside
# torch.compile(backend="neuron"). Every result is checked against PyTorch's SDPA on the CPU.
#
#     python fused_attention.py
#
# Prints one JSON line: the largest absolute error of each path (outputs and gradients).

import json
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import nki
import nki.language as nl
from torch_neuronx import nki_op, wrap_nki

B, H, S, D = 2, 4, 64, 32


@nki.jit
def attention_kernel(q, k, v, bias):
    """softmax(q k^T / sqrt(d) + bias) v for q, k, v [heads, seq, d] (seq, d <= 128), bias [seq, seq]."""
    heads, seq, d = q.shape
    out = nl.ndarray(q.shape, dtype=q.dtype, buffer=nl.shared_hbm)
    mask = nl.load(bias)
    for h in nl.affine_range(heads):
        q_t = nl.load_transpose2d(q[h])  # [d, seq]: the contraction runs over the partitions
        k_t = nl.load_transpose2d(k[h])
        scores = nl.matmul(q_t, k_t, transpose_x=True)  # q @ k^T, [seq, seq] in PSUM
        probs = nl.softmax(nl.add(nl.multiply(scores, 1.0 / math.sqrt(d)), mask), axis=1)
        nl.store(out[h], nl.matmul(probs, nl.load(v[h])))
    return out


def causal_bias(seq, device):
    return torch.full((seq, seq), float("-inf"), device=device).triu(1)


@nki_op("fused_attention::nki_causal_attention")
def nki_causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, h, s, d = q.shape
    flat = [t.reshape(b * h, s, d).contiguous() for t in (q, k, v)]
    return wrap_nki(attention_kernel)(*flat, causal_bias(s, q.device)).reshape(b, h, s, d)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs, output)


def _backward(ctx, grad):
    # the softmax recomputed from q, k; dS = P * (dP - rowsum(dO * O))
    q, k, v, out = ctx.saved_tensors
    scale = 1.0 / math.sqrt(q.shape[-1])
    p = torch.softmax(q @ k.transpose(-1, -2) * scale + causal_bias(q.shape[-2], q.device), dim=-1)
    dv = p.transpose(-1, -2) @ grad
    dp = grad @ v.transpose(-1, -2)
    ds = p * (dp - (grad * out).sum(dim=-1, keepdim=True))
    return ds @ k * scale, ds.transpose(-1, -2) @ q * scale, dv


nki_causal_attention.register_autograd(_backward, setup_context=_setup)


def attention_grads(fn, q, k, v, grad_out):
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = fn(q, k, v)
    out.backward(grad_out)
    return [out.detach().cpu()] + [t.grad.cpu() for t in (q, k, v)]


def max_err(got, want):
    return max((g.float() - w.float()).abs().max().item() for g, w in zip(got, want))


def main():
    torch.manual_seed(0)
    q, k, v, g = (torch.randn(B, H, S, D) for _ in range(4))
    dev = [t.to("neuron") for t in (q, k, v, g)]
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    want = attention_grads(sdpa, q, k, v, g)

    out = {"example": "fused_attention", "shape": [B, H, S, D]}
    out["sdpa_err"] = max_err(attention_grads(sdpa, *dev), want)
    with sdpa_kernel(SDPBackend.OVERRIDEABLE):
        out["sdpa_overrideable_err"] = max_err(attention_grads(sdpa, *dev), want)
    bf16 = [t.bfloat16() for t in dev]
    want_bf16 = attention_grads(sdpa, *(t.bfloat16() for t in (q, k, v, g)))
    out["sdpa_bf16_err_vs_cpu_bf16"] = max_err(attention_grads(sdpa, *bf16), want_bf16)

    torch.manual_seed(1)
    mha = torch.nn.MultiheadAttention(H * D, H, batch_first=True)
    x = torch.randn(B, S, H * D)
    causal = torch.ones(S, S, dtype=torch.bool).triu(1)
    ref, _ = mha(x, x, x, attn_mask=causal, need_weights=False)
    mha_n = mha.to("neuron")
    xn = x.to("neuron")
    got, _ = mha_n(xn, xn, xn, attn_mask=causal.to("neuron"), need_weights=False)
    out["mha_err"] = (got.detach().cpu() - ref.detach()).abs().max().item()

    out["nki_err"] = max_err(attention_grads(nki_causal_attention, *dev), want)
    torch_neuronx.reset_dynamo_metrics()
    compiled = torch.compile(nki_causal_attention, backend="neuron", fullgraph=True)
    out["nki_compiled_err"] = max_err(attention_grads(compiled, *dev), want)
    out["dynamo_metrics"] = torch_neuronx.get_dynamo_metrics()
    out["executed_has_sdpa"] = "aten::scaled_dot_product_attention" in torch_neuronx.get_executed_ops()
    out["fallback_ops"] = sorted(set(torch_neuronx.get_fallback_ops()))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
