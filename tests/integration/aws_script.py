"""A script written only against AWS TorchNeuron's documented API (torch_neuronx + torch.neuron), run unchanged
by tests/integration/test_torch_neuronx_api.py in a fresh interpreter: ``import torch_neuronx`` is its first
line. It prints one JSON object of what it observed; the test compares it with the CPU's results."""

import torch_neuronx  # noqa: I001  (first, as AWS's scripts do)

import json
import os
import sys
from collections import Counter

import torch
from torch.profiler import ProfilerActivity

import nki
import nki.isa as nisa
import nki.language as nl
from torch_neuronx import nki_op, wrap_nki
from torch_neuronx.profiling import NeuronProfiler

out = {"count": torch_neuronx.device_count(), "same_count": torch_neuronx.device_count() == torch.neuron.device_count()}

# device selection
torch_neuronx.set_device(1)
out["current_after_set"] = torch_neuronx.current_device()
with torch_neuronx.device(0):
    out["in_context"] = torch_neuronx.current_device()
torch_neuronx.set_device(0)
try:
    torch_neuronx.set_device(torch_neuronx.device_count())
except ValueError as e:
    out["bad_device"] = str(e)

# memory: AWS's nested statistics and CUDA's flat ones describe the same allocator
torch_neuronx.synchronize()
before = torch_neuronx.memory_allocated()
x = torch.randn(256, 256, device="neuron")
torch_neuronx.synchronize()
stats = torch_neuronx.memory_stats()
out["grew_by"] = torch_neuronx.memory_allocated() - before
out["nested_equals_flat"] = stats["allocated_bytes"]["current"] == stats["allocated_bytes.all.current"]
out["aws_counters"] = all(k in stats for k in ("num_ooms", "num_alloc_retries", "allocation_requests",
                                                "num_tensor_frees"))
out["peak_ge_current"] = torch_neuronx.max_memory_allocated() >= torch_neuronx.memory_allocated()
out["summary_mentions_device"] = "neuron:0" in torch_neuronx.memory_summary()

# streams and events
s = torch_neuronx.Stream()
start, end = torch_neuronx.Event(enable_timing=True), torch_neuronx.Event(enable_timing=True)
with torch_neuronx.stream(s):
    start.record()
    y = x @ x
    end.record()
    out["stream_is_current"] = torch_neuronx.current_stream() == s
end.synchronize()
torch_neuronx.current_stream().wait_stream(s)
out["elapsed_ms_nonneg"] = start.elapsed_time(end) >= 0
out["matmul_err"] = float((y.cpu() - x.cpu() @ x.cpu()).abs().max())
out["default_stream_back"] = torch_neuronx.current_stream() == torch_neuronx.default_stream()

# op tracking, with AWS's op names
lin = torch.nn.Linear(256, 16).to("neuron")
torch_neuronx.clear_op_tracking()
z = lin(x).relu()
torch_neuronx.synchronize()
executed = Counter(torch_neuronx.get_executed_ops())
out["executed"] = sorted(executed)
out["linear_count"] = executed["aten::linear"]
out["fallback"] = torch_neuronx.get_fallback_ops()
torch_neuronx.clear_op_tracking()
out["after_clear"] = torch_neuronx.get_executed_ops()
out["linear_err"] = float((z.detach().cpu() - torch.nn.functional.linear(x.cpu(), lin.weight.detach().cpu(),
                                                                              lin.bias.detach().cpu()).relu())
                          .abs().max())


# NKI: a kernel called through wrap_nki, registered with nki_op (AWS's docs: no mutates_args needed)
@nki.jit
def scale_kernel(a, out):
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out, src=t)


@nki_op("awsscript::scale")
def scale(a: torch.Tensor) -> torch.Tensor:
    result = torch.empty_like(a)
    wrap_nki(scale_kernel)(a, result)
    return result


a = torch.randn(128, 64, device="neuron")
out["nki_eager_err"] = float((scale(a).cpu() - 3 * a.cpu()).abs().max())
compiled = torch.compile(lambda t: scale(t + 1) * 2, backend="neuron", fullgraph=True)
out["nki_compiled_err"] = float((compiled(a).cpu() - 6 * (a.cpu() + 1)).abs().max())
out["dynamo_metrics_is_dict"] = isinstance(torch_neuronx.get_dynamo_metrics(), dict)

# profiler
trace_dir = sys.argv[1]
with NeuronProfiler(pytorch_activities=[ProfilerActivity.CPU], neuron_output_dir=trace_dir) as prof:
    (x * 2).sum().item()
out["profile_files"] = sorted(os.listdir(trace_dir))
with open(os.path.join(trace_dir, "pytorch_trace.json")) as f:
    names = {e.get("name") for e in json.load(f)["traceEvents"]}
out["trace_has_device_mul"] = any(n and "mul" in n for n in names)
out["profiler_active_after"] = prof.is_active()

# an XLA-era name explains itself
try:
    torch_neuronx.trace(lin, x)
except AttributeError as e:
    out["trace_error"] = str(e)

print(json.dumps(out))
