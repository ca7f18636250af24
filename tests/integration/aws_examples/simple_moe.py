import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's simple_moe example, as a TorchNeuron user writes it: a mixture-of-experts layer (a linear router,
# top-2 routing, experts of two matmuls with a GELU between) whose experts run as grouped matmuls, ``torch._grouped_mm``
# (the MoE op AWS documents as supported), or as a per-expert loop; forward and backward on device='neuron',
# eagerly or under torch.compile(backend="neuron").
#
#     python simple_moe.py [--device neuron|cpu] [--compile]
#
# Prints one JSON line: loss and gradient checksums of both variants, their largest difference, and the
# warnings the run raised.

import argparse
import json
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, dim=32, hidden=64, experts=4, top_k=2, grouped=True):
        super().__init__()
        self.experts, self.top_k, self.grouped = experts, top_k, grouped
        self.router = nn.Linear(dim, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, dim, hidden) / dim ** 0.5)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, dim) / hidden ** 0.5)

    def forward(self, x):
        t, _ = x.shape
        probs = self.router(x).float().softmax(dim=-1)
        weight, expert = probs.topk(self.top_k, dim=-1)
        weight = (weight / weight.sum(dim=-1, keepdim=True)).to(x.dtype)
        # tokens sorted by expert: each expert's rows are one contiguous group
        flat = expert.reshape(-1)
        order = flat.argsort(stable=True)
        token = order // self.top_k
        xs = x[token]
        counts = (flat[:, None] == torch.arange(self.experts, device=x.device)).sum(dim=0)
        if self.grouped:
            offs = counts.cumsum(dim=0).to(torch.int32)  # end row of each expert's group
            h = F.gelu(torch._grouped_mm(xs, self.w1, offs=offs))
            ys = torch._grouped_mm(h, self.w2, offs=offs)
        else:
            outs, start = [], 0
            for e, n in enumerate(counts.tolist()):
                outs.append(F.gelu(xs[start:start + n] @ self.w1[e]) @ self.w2[e])
                start += n
            ys = torch.cat(outs)
        ys = ys * weight.reshape(-1)[order, None]
        return torch.zeros_like(x).index_add(0, token, ys)


def run(device, grouped, compile_, x):
    torch.manual_seed(0)
    model = MoE(grouped=grouped).to(device=device, dtype=torch.bfloat16)
    fwd = torch.compile(model, backend="neuron") if compile_ else model
    y = fwd(x.to(device))
    loss = y.float().square().mean()
    loss.backward()
    grads = {n: p.grad.float().cpu() for n, p in model.named_parameters()}
    return y.float().cpu(), loss.item(), grads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="neuron")
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(1)
    x = torch.randn(48, 32, dtype=torch.bfloat16)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y_g, loss_g, grads_g = run(device, True, args.compile, x)
        y_l, loss_l, grads_l = run(device, False, False, x)
    print(json.dumps({
        "example": "simple_moe", "device": args.device, "compiled": args.compile,
        "loss_grouped_mm": loss_g, "loss_loop": loss_l,
        "out_checksum": y_g.double().sum().item(),
        "grad_checksums": {n: g.double().abs().sum().item() for n, g in grads_g.items()},
        "max_diff_grouped_vs_loop": max([(y_g - y_l).abs().max().item()]
                                        + [(grads_g[n] - grads_l[n]).abs().max().item() for n in grads_g]),
        "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught}),
        "fallback_ops": torch_neuronx.get_fallback_ops() if device.type == "neuron" else [],
    }))


if __name__ == "__main__":
    main()
