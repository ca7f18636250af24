"""torch.compile(backend="neuron") under the profiler: each compiled piece run is one device event with its
fused estimate, and a CPU row of its own that carries the device time."""

import torch
import torch._dynamo
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from torchneuron.estimator import estimate
from torchneuron.profiler import device_activities, device_table


def test_compiled_graph_pieces_are_device_events_with_estimates():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8)).to("neuron")
    compiled = torch.compile(model, backend="neuron")
    x = torch.randn(32, 64, device="neuron")
    compiled(x).sum().backward()  # compile outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        compiled(x).sum().backward()
    graphs = [a for a in device_activities() if a.kind == "graph"]
    assert len(graphs) == 2  # the forward program and the backward program
    for g in graphs:
        assert g.name.startswith("neuron::graph ") and g.name.endswith(" ops)")
        assert g.estimated_ns > 0 and g.metadata["target"] == "trn2" and g.metadata["bound"] in ("Tensor", "HBM")
        assert g.end_ns > g.start_ns and g.correlation > 0
    forward = min(graphs, key=lambda g: g.start_ns)
    # The fused estimate of the forward piece agrees with estimating the model directly, compiled.
    direct = estimate(model, x, mode="compiled")
    assert forward.metadata["est_flops"] == direct.flops
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    for g in graphs:
        assert rows[(g.name, DeviceType.CPU)].device_time_total > 0
    assert "graph" in device_table()
    torch._dynamo.reset()
