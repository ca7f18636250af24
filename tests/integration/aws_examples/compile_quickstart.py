import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's compile/QUICKSTART example, as a TorchNeuron user writes it: a model moved to device='neuron' and
# compiled with torch.compile(model, backend="neuron"), used for inference and for training steps, checked
# against the same model run eagerly on the CPU.
#
#     python compile_quickstart.py
#
# Prints one JSON line: the errors against the CPU, the losses, and torch_neuronx.get_dynamo_metrics().

import copy
import json

import torch
import torch.nn as nn


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10))


def main():
    cpu_model = make_model()
    model = copy.deepcopy(cpu_model).to("neuron")
    compiled = torch.compile(model, backend="neuron")
    torch.manual_seed(1)
    x, target = torch.randn(16, 32), torch.randint(0, 10, (16,))
    xn, tn = x.to("neuron"), target.to("neuron")

    out = {"example": "compile/QUICKSTART"}
    torch_neuronx.reset_dynamo_metrics()
    with torch.no_grad():
        y = compiled(xn)
        out["inference_device"] = str(y.device)
        out["inference_err"] = (y.cpu() - cpu_model(x)).abs().max().item()

    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    cpu_opt = torch.optim.AdamW(cpu_model.parameters(), lr=1e-2)
    losses, cpu_losses = [], []
    for _ in range(4):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(compiled(xn), tn)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        cpu_opt.zero_grad()
        cpu_loss = nn.functional.cross_entropy(cpu_model(x), target)
        cpu_loss.backward()
        cpu_opt.step()
        cpu_losses.append(cpu_loss.item())
    out["losses"], out["cpu_losses"] = losses, cpu_losses
    out["param_err"] = max((p.detach().cpu() - q.detach()).abs().max().item()
                           for p, q in zip(model.parameters(), cpu_model.parameters()))
    metrics = torch_neuronx.get_dynamo_metrics()
    out["dynamo_metrics"] = {k: metrics[k] for k in ("graphs_compiled", "recompiles", "eager_pieces")}
    out["fallback_ops"] = sorted(set(torch_neuronx.get_fallback_ops()))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
