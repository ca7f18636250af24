"""profile_memory=True: every neuron allocation and free reaches PyTorch's profiler, as CUDA's allocator
reports them; the events add up to torch.neuron.memory_allocated() and peak at max_memory_allocated()."""

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _memory_events(prof, name="[memory]"):
    return sorted((e for e in prof.profiler.kineto_results.events()
                   if e.name() == name and e.device_type() == DeviceType.PrivateUse1), key=lambda e: e.start_ns())


def test_memory_events_add_up_to_the_allocators_statistics():
    torch.neuron.synchronize()
    base = torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to("neuron")
        x = torch.randn(64, 128, device="neuron")
        model(x).logsumexp(1).mean().backward()
        del x
        kept = [p.grad for p in model.parameters()]
    events = _memory_events(prof)
    assert len(events) > 10 and all(e.device_index() == 0 for e in events)
    running, peak = base, base
    for e in events:
        running += e.nbytes()
        peak = max(peak, running)
    assert running == torch.neuron.memory_allocated()
    assert peak == torch.neuron.max_memory_allocated()
    assert any(e.nbytes() < 0 for e in events) and kept


def test_memory_shows_in_key_averages():
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        torch.empty(1 << 20, device="neuron").fill_(1.0)
    table = prof.key_averages().table(sort_by="self_device_memory_usage", row_limit=5)
    assert "NEURON Mem" in table
    rows = {(e.key, e.device_type): e for e in prof.key_averages()}
    assert rows[("aten::empty", DeviceType.CPU)].device_memory_usage == 4 << 20


def test_out_of_memory_is_reported_to_the_profiler():
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        with pytest.raises(torch.OutOfMemoryError, match="neuron:0 out of memory"):
            torch.empty(1 << 45, dtype=torch.uint8, device="neuron")
    assert len(_memory_events(prof, "[OutOfMemory]")) == 1
