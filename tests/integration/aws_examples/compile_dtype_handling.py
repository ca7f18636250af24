import torch_neuronx  # noqa: F401,I001  (first, as AWS's examples begin: the neuron device and its API)

# AWS's compile/dtype_handling example, as a TorchNeuron user writes it: one function compiled with
# torch.compile(backend="neuron") and called with float32, bfloat16, float16 and integer inputs (each dtype is
# its own compiled graph), mixed-precision autocast, and float64 (computed in float32 on NeuronCores). Each
# result's dtype and value is checked against the same function eagerly on the CPU.
#
#     python compile_dtype_handling.py
#
# Prints one JSON line: per dtype, the result dtype on neuron and on the CPU, and the largest error.

import json

import torch


def fn(x, y):
    return (x * y + x).sum(dim=-1), torch.maximum(x, y), x.abs() // 2 if not x.is_floating_point() else x.sin()


def main():
    compiled = torch.compile(fn, backend="neuron")
    torch.manual_seed(0)
    out = {"example": "compile/dtype_handling", "dtypes": {}}
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.float64):
        if dtype.is_floating_point:
            x, y = torch.randn(16, 32).to(dtype), torch.randn(16, 32).to(dtype)
        else:
            x, y = torch.randint(-100, 100, (16, 32), dtype=dtype), torch.randint(-100, 100, (16, 32), dtype=dtype)
        got = compiled(x.to("neuron"), y.to("neuron"))
        want = fn(x, y)
        out["dtypes"][str(dtype).removeprefix("torch.")] = {
            "neuron_dtypes": [str(g.dtype).removeprefix("torch.") for g in got],
            "cpu_dtypes": [str(w.dtype).removeprefix("torch.") for w in want],
            "max_err": max((g.cpu().double() - w.double()).abs().max().item() for g, w in zip(got, want)),
            "max_rel_err": max(((g.cpu().double() - w.double()).abs() / w.double().abs().clamp(min=1)).max().item()
                               for g, w in zip(got, want)),
        }

    # mixed precision: the compiled model under autocast computes its matmuls in bfloat16
    torch.manual_seed(1)
    model = torch.nn.Linear(32, 8)
    x = torch.randn(16, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = model(x)
    compiled_model = torch.compile(model.to("neuron"), backend="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        got = compiled_model(x.to("neuron"))
    out["autocast"] = {"neuron_dtype": str(got.dtype).removeprefix("torch."),
                       "cpu_dtype": str(want.dtype).removeprefix("torch."),
                       "max_err": (got.float().cpu() - want.float()).abs().max().item()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
