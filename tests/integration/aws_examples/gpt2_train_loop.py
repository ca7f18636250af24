import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's gpt2-train-loop example, as a TorchNeuron user writes it: a small GPT-2 in plain PyTorch, trained
# with AdamW on device='neuron' for a few steps, eagerly or under torch.compile(backend="neuron").
#
#     python gpt2_train_loop.py [--device neuron|cpu] [--compile] [--steps N]
#
# Prints one JSON line: the loss per step and the final parameters' checksum (tests compare it with --device cpu).

import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab=128, ctx=32, d=64, heads=4, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "out.weight")) else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="neuron")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(0)
    model = GPT2().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    # a fixed batch of "text": a repeating pattern the model can learn in a few steps
    data = (torch.arange(4 * 33) * 7 % 128).view(4, 33)
    x, y = data[:, :-1].to(device), data[:, 1:].to(device)

    def train_step(x, y):
        loss = model(x, y)
        loss.backward()
        return loss

    step = torch.compile(train_step, backend="neuron") if args.compile else train_step
    losses = []
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        loss = step(x, y)
        opt.step()
        losses.append(loss.item())
    if device.type == "neuron":
        torch_neuronx.synchronize()
    checksum = sum(p.detach().cpu().double().sum().item() for p in model.parameters())
    print(json.dumps({"example": "gpt2-train-loop", "device": str(loss.device), "compiled": args.compile,
                      "losses": losses, "param_checksum": checksum,
                      "fallback_ops": torch_neuronx.get_fallback_ops() if device.type == "neuron" else []}))


if __name__ == "__main__":
    main()
