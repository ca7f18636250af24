import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's compile/device_placement example, as a TorchNeuron user writes it: where the inputs and results of a
# function compiled with torch.compile(backend="neuron") live. Neuron inputs give neuron results; CPU inputs
# are copied to the device (AWS documents this, with a warning) and the results come back on neuron; the
# user moves results to the CPU with .cpu().
#
#     python compile_device_placement.py
#
# Prints one JSON line: result devices, the warnings raised, and the errors against the CPU.

import json
import warnings

import torch


def fn(x, y):
    return torch.tanh(x @ y) * 2 + y.sum()


def main():
    compiled = torch.compile(fn, backend="neuron")
    torch.manual_seed(0)
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    want = fn(x, y)
    out = {"example": "compile/device_placement"}

    r = compiled(x.to("neuron"), y.to("neuron"))
    out["neuron_inputs_result_device"] = str(r.device)
    out["neuron_inputs_err"] = (r.cpu() - want).abs().max().item()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r1 = compiled(x, y)  # CPU inputs
        r2 = compiled(x, y)
    out["cpu_inputs_result_device"] = str(r1.device)
    out["cpu_inputs_err"] = max((r.cpu() - want).abs().max().item() for r in (r1, r2))
    out["cpu_inputs_warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]

    # explicit placement: the model on neuron, the data moved by the user, results brought back
    model = torch.nn.Linear(8, 4)
    want_lin = model(x)
    compiled_model = torch.compile(model.to("neuron"), backend="neuron")
    res = compiled_model(x.to("neuron"))
    out["model_result_device"] = str(res.device)
    out["model_err"] = (res.cpu() - want_lin).abs().max().item()
    out["device_count"] = torch_neuronx.device_count()
    if torch_neuronx.device_count() > 1:  # a second NeuronCore: results follow their inputs
        r = compiled(x.to("neuron:1"), y.to("neuron:1"))
        out["neuron1_result_device"] = str(r.device)
        out["neuron1_err"] = (r.cpu() - want).abs().max().item()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
