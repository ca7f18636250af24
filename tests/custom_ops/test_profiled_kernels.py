"""Under torch.profiler (PrivateUse1) every NKI kernel launched on neuron tensors is one "kernel" device event
carrying the simulator's cost estimate, linked to the nki_op that launched it; shape-only launches record none."""

from __future__ import annotations

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import torchneuron
from tests.custom_ops import kernels
from torchneuron import nki
from torchneuron.profiler import device_activities

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


@torchneuron.nki_op("profiled_test::add_then_scale", mutates_args=())
def add_then_scale(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    s = kernels.add_returning(a, b)
    out = torch.empty_like(s)
    kernels.scale_into(s, out)
    return out


def test_each_kernel_launch_is_a_device_event_with_its_estimate():
    a = torch.randn(128, 16).to("neuron")
    b = torch.randn(128, 16).to("neuron")
    s = torch.neuron.Stream()
    with profile(activities=ACTIVITIES) as prof, torch.neuron.stream(s):
        out = torch.ops.profiled_test.add_then_scale(a, b)
    torch.testing.assert_close(out.cpu(), (a.cpu() + b.cpu()) * 2)
    kernel_events = [e for e in device_activities() if e.kind == "kernel"]
    assert [e.name for e in kernel_events] == ["add_returning", "scale_into"]
    add = kernel_events[0]
    expected = nki.estimate(kernels.add_returning, a.cpu().numpy(), b.cpu().numpy())
    assert (add.device, add.stream) == (0, s.stream_id)
    assert add.estimated_ns == expected.latency_ns > 0
    assert add.metadata["bound"] == expected.bound and add.metadata["est_bytes"] == expected.dma_bytes
    assert add.metadata["api"] == "current" and add.end_ns > add.start_ns
    assert kernel_events[0].end_ns <= kernel_events[1].start_ns
    # the custom op's CPU row carries its kernels' device time
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    assert rows[("profiled_test::add_then_scale", DeviceType.CPU)].device_time_total > 0


def test_wrap_nki_legacy_grid_and_no_events_outside_a_session_or_shape_only():
    x = torch.randn(256, 4).to("neuron")
    k = torchneuron.wrap_nki(kernels.legacy_rows_plus_one)
    k[2](x)  # outside a session: nothing recorded, nothing raised
    y = x[:128].clone()
    with profile(activities=ACTIVITIES):
        k[2](x)
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            add_then_scale(mode.from_tensor(y), mode.from_tensor(y))
    [event] = [e for e in device_activities() if e.kind == "kernel"]
    assert (event.name, event.metadata["grid"], event.metadata["api"]) == ("legacy_rows_plus_one", [2], "legacy")
