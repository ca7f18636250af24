"""Device events recorded from Python (NKI kernels, custom executors): on the device's current stream,
linked to the enclosing range, with their estimate; free when nothing records."""

import json

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from torchneuron.profiler import (
    device_activities,
    device_event,
    now_ns,
    record_device_event,
    recording,
)

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def test_outside_a_session_nothing_is_recorded_and_cost_is_never_called():
    calls = []
    assert not recording()
    with device_event("mylib::k", "neuron:0", cost=lambda: calls.append(1) or (1.0, {})):
        pass
    record_device_event("mylib::k", 0, 0, 1)
    assert calls == []


def test_a_kernel_event_gets_its_own_cpu_row_and_device_time(tmp_path):
    x = torch.randn(64, 64, device="neuron")
    s = torch.neuron.Stream()
    with profile(activities=ACTIVITIES) as prof, torch.neuron.stream(s):
        with device_event("mylib::my_kernel", x.device, kind="kernel",
                          cost=lambda: (1500.0, {"bound": "Vector", "est_flops": 0})):
            (x * 2).sum()
    acts = device_activities()
    [k] = [a for a in acts if a.name == "mylib::my_kernel"]
    assert (k.kind, k.device, k.stream) == ("kernel", 0, s.stream_id)
    assert (k.estimated_ns, k.metadata["bound"]) == (1500.0, "Vector")
    inner = [a for a in acts if a.kind == "op"]
    assert inner and all(k.start_ns <= a.start_ns and a.end_ns <= k.end_ns for a in inner)
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    assert rows[("mylib::my_kernel", DeviceType.CPU)].device_time_total > 0
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    [ev] = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("name") == "mylib::my_kernel"
            and e.get("cat") == "kernel"]
    assert ev["args"]["est_trn_us"] == 1.5 and ev["tid"] == s.stream_id


def test_without_a_cpu_range_the_enclosing_op_carries_the_time():
    with profile(activities=ACTIVITIES) as prof:
        with record_function("mylib::custom_op"):
            start = now_ns()
            record_device_event("mylib::nki_kernel", "neuron:1", start, start + 2000, stream=0, estimated_ns=800.0,
                                metadata={"engine": "Tensor"})
    [k] = device_activities()
    assert (k.name, k.device, k.end_ns - k.start_ns) == ("mylib::nki_kernel", 1, 2000)
    assert k.metadata == {"engine": "Tensor"}
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    assert rows[("mylib::custom_op", DeviceType.CPU)].device_time_total == pytest.approx(2.0)


def test_a_failing_kernel_records_nothing_and_bad_arguments_are_named():
    with profile(activities=ACTIVITIES):
        with pytest.raises(ValueError, match="boom"):
            with device_event("mylib::k", "neuron:0"):
                raise ValueError("boom")
        with pytest.raises(ValueError, match="belong to a neuron device, got cpu"):
            device_event("mylib::k", "cpu")
        with pytest.raises(RuntimeError, match="unknown device activity kind 'warp'"):
            record_device_event("mylib::k", 0, 0, 1, kind="warp")
    assert device_activities() == []
