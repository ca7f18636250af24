"""torch.profiler with ProfilerActivity.PrivateUse1: one neuron device event per executed op, on its stream,
linked to the CPU op that launched it (device time in key_averages), with the estimated Trainium time; the
Chrome trace is valid JSON with device rows named `neuron:N stream S`."""

import json

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import torchneuron
from torchneuron.estimator import machine
from torchneuron.profiler import device_activities

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8)).to("neuron")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One profiled training step of a small MLP: the profiler, its events and its Chrome trace."""
    model = _mlp()
    x = torch.randn(32, 64, device="neuron")
    model(x).sum().backward()  # warm-up outside the profile
    with profile(activities=ACTIVITIES) as prof:
        model(x).sum().backward()
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    prof.export_chrome_trace(str(path))
    return prof, device_activities(), json.loads(path.read_text())


def test_every_executed_op_has_a_device_event(trained):
    _, acts, _ = trained
    names = [a.name for a in acts]
    # forward: addmm, gelu, addmm, sum; backward: mm x3, gelu_backward, sums, the gradient seed
    assert names.count("aten::addmm") == 2 and names.count("aten::mm") == 3
    assert {"aten::gelu", "aten::gelu_backward", "aten::sum"} <= set(names)
    assert all(a.kind == "op" and a.device == 0 and a.stream == 0 and a.end_ns >= a.start_ns for a in acts)
    assert all(a.correlation > 0 for a in acts)


def test_key_averages_has_device_time_of_the_launching_ops(trained):
    prof, _, _ = trained
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    for op in ("aten::addmm", "aten::mm", "aten::gelu"):
        cpu_row = rows[(op, DeviceType.CPU)]
        assert cpu_row.device_time_total > 0 and cpu_row.self_device_time_total > 0
        assert rows[(op, DeviceType.PrivateUse1)].device_time_total == pytest.approx(cpu_row.device_time_total)
    linear, addmm = rows[("aten::linear", DeviceType.CPU)], rows[("aten::addmm", DeviceType.CPU)]
    assert linear.device_time_total >= addmm.device_time_total  # a parent's device time includes its children's
    assert "NEURON total" in prof.key_averages().table(sort_by="device_time_total")


def test_chrome_trace_has_named_device_rows_and_linked_kernels(trained):
    _, acts, trace = trained
    events = trace["traceEvents"]
    meta = {(e["name"], e["pid"], e.get("tid")): e["args"] for e in events if e.get("ph") == "M"}
    assert meta[("process_name", 0, 0)]["name"] == "neuron:0"
    assert meta[("thread_name", 0, 0)]["name"] == "neuron:0 stream 0"
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert len(kernels) == len(acts)
    cpu_ops = {e["args"].get("External id"): e for e in events if e.get("cat") == "cpu_op"}
    for k in kernels:
        assert k["pid"] == 0 and k["tid"] == 0 and k["dur"] >= 0
        launcher = cpu_ops[k["args"]["External id"]]
        assert launcher["name"] == k["name"]  # the CPU op that launched it
        assert launcher["ts"] <= k["ts"] and k["ts"] + k["dur"] <= launcher["ts"] + launcher["dur"] + 1
        assert k["args"]["device"] == "neuron:0" and k["args"]["kind"] == "op" and k["args"]["target"] == "trn2"


def test_estimated_trainium_time_rests_on_the_op_shapes(trained):
    _, acts, trace = trained
    m = machine()
    addmm = [a for a in acts if a.name == "aten::addmm"]
    first = addmm[0]  # Linear(64, 128) on a [32, 64] batch
    assert first.op == "aten::addmm" and first.metadata["est_flops"] == 2 * 32 * 64 * 128
    assert first.metadata["est_bytes"] == 4 * (128 + 32 * 64 + 64 * 128 + 32 * 128)
    roofline = max(first.metadata["est_flops"] / m.tensor_fp32_flops_per_ns,
                   first.metadata["est_bytes"] / m.hbm_bytes_per_ns)
    assert first.estimated_ns >= roofline and first.metadata["bound"] in ("Tensor", "HBM")
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert all(e["args"]["est_trn_us"] > 0 and e["args"]["sim_us"] >= 0 for e in kernels)


def test_ops_on_a_side_stream_and_another_device_land_on_their_rows(tmp_path):
    s = torch.neuron.Stream(device="neuron:0")
    with profile(activities=ACTIVITIES) as prof:
        with torch.neuron.stream(s):
            torch.ones(8, device="neuron:0").exp()
        torch.ones(8, device="neuron:1").sin()
    acts = {a.name: a for a in device_activities()}
    assert (acts["aten::exp"].device, acts["aten::exp"].stream) == (0, s.stream_id)
    assert (acts["aten::sin"].device, acts["aten::sin"].stream) == (1, 0)
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    names = {e["args"]["name"] for e in json.loads(path.read_text())["traceEvents"]
             if e.get("ph") == "M" and e["name"] in ("thread_name", "process_name")}
    assert {f"neuron:0 stream {s.stream_id}", "neuron:1 stream 0", "neuron:0", "neuron:1"} <= names


def test_nothing_records_outside_a_neuron_session():
    torch.ones(4, device="neuron").relu()
    assert not torchneuron._C._profiler_recording()
    with profile(activities=[ProfilerActivity.CPU]):
        assert not torchneuron._C._profiler_recording()  # no neuron activity asked for: no session
        torch.ones(4, device="neuron").relu()
    with profile(activities=ACTIVITIES) as prof:
        assert torchneuron._C._profiler_recording()
        torch.ones(4).relu()  # a CPU program: no device events
    assert device_activities() == []
    assert not any(e.device_type == DeviceType.PrivateUse1 for e in prof.events())


def test_a_failing_op_leaves_no_event_and_the_session_continues():
    a = torch.ones(2, 3, device="neuron")
    with profile(activities=ACTIVITIES):
        with pytest.raises(RuntimeError):
            a @ a
        a.neg()
    assert [x.name for x in device_activities()] == ["aten::neg"]


def test_legacy_profiler_markers_report_device_time():
    a = torch.randn(64, 64, device="neuron")
    with torch.autograd.profiler.profile(use_device="neuron", use_kineto=False) as prof:
        (a @ a).relu()
    rows = {e.key: e for e in prof.key_averages()}
    assert rows["aten::mm"].device_time_total > 0


def test_copies_are_memcpy_events_of_the_copy_op():
    host = torch.randn(128, 128).pin_memory()
    with profile(activities=ACTIVITIES) as prof:
        d = host.to("neuron", non_blocking=True)
        peer = d.to("neuron:1")
        back = peer.cpu()
    copies = [a for a in device_activities() if a.kind == "copy"]
    assert [(a.name.split()[1], a.device) for a in copies] == [("HtoD", 0), ("DtoD", 1), ("DtoH", 1)]
    assert all(a.correlation > 0 and a.end_ns >= a.start_ns for a in copies)
    assert copies[0].estimated_ns is None  # the host link is not in the target's numbers
    assert copies[1].estimated_ns > 0 and copies[1].metadata["est_bytes"] == 2 * 128 * 128 * 4
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    assert rows[("aten::_copy_from", DeviceType.CPU)].device_time_total > 0
    torch.testing.assert_close(back, host)
