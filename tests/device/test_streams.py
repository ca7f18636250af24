"""Streams and events: ordering, non_blocking copies from pinned memory, cross-stream waits, timing."""

import pytest
import torch

from tests.helpers import run_python


def test_streams_are_distinct_and_current_stream_switches():
    default = torch.neuron.current_stream()
    assert default == torch.neuron.default_stream()
    s = torch.neuron.Stream()
    assert s != default and s.device_index == 0
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
        assert torch.accelerator.current_stream() == s
    assert torch.neuron.current_stream() == default


def test_non_blocking_copy_from_pinned_memory_and_event_ordering():
    host = torch.randn(1 << 22).pin_memory()
    assert host.is_pinned()
    s = torch.neuron.Stream()
    with torch.neuron.stream(s):
        dev = host.to("neuron", non_blocking=True)
        done = torch.neuron.Event()
        done.record()
    done.synchronize()
    assert done.query()
    assert torch.equal(dev.cpu(), host)


def test_wait_event_orders_consumer_stream_after_producer():
    producer, consumer = torch.neuron.Stream(), torch.neuron.Stream()
    src = torch.randn(1 << 20).pin_memory()
    with torch.neuron.stream(producer):
        dev = src.to("neuron", non_blocking=True)
        ready = producer.record_event()
    consumer.wait_event(ready)
    with torch.neuron.stream(consumer):
        out = dev * 2  # must see the copied data
    consumer.synchronize()
    assert torch.equal(out.cpu(), src * 2)


def test_non_blocking_device_to_pinned_host():
    dev = torch.arange(1 << 20, dtype=torch.float32, device="neuron")
    host = torch.empty(1 << 20, dtype=torch.float32).pin_memory()
    host.copy_(dev, non_blocking=True)
    torch.neuron.current_stream().synchronize()
    assert torch.equal(host, torch.arange(1 << 20, dtype=torch.float32))


def test_event_elapsed_time():
    start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
    start.record()
    x = torch.randn(256, 256, device="neuron")
    for _ in range(5):
        x = x @ x / 16
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    untimed = torch.neuron.Event()
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing"):  # torch.Event checks it, as for CUDA
        untimed.elapsed_time(end)


@pytest.mark.sim_only  # its child process runs the simulator (clean environment)
def test_launch_blocking_runs_copies_synchronously(tmp_path):
    code = (
        "import torch, torchneuron\n"
        "h = torch.ones(1 << 20).pin_memory()\n"
        "s = torch.neuron.Stream()\n"
        "with torch.neuron.stream(s):\n"
        "    d = h.to('neuron', non_blocking=True)\n"
        "print(s.query())\n"
    )
    out = run_python(code, clean=True, NEURON_LAUNCH_BLOCKING="1")
    assert out.stdout.strip() == "True"  # nothing left in flight once the call returned


def test_synchronize_all_devices():
    for i in range(torch.neuron.device_count()):
        torch.neuron.synchronize(i)
    torch.accelerator.synchronize()


@pytest.mark.sim_only  # on nrt its children would need the cores this process holds (tests/nrt checks exit there)
def test_interpreter_exits_cleanly_with_async_work_in_flight():
    # The source tensor is dropped while its copy is queued: the worker must release it without the GIL.
    code = (
        "import torch, torchneuron\n"
        "s = torch.neuron.Stream()\n"
        "with torch.neuron.stream(s):\n"
        "    for _ in range(20):\n"
        "        d = torch.ones(1 << 18).pin_memory().to('neuron', non_blocking=True)\n"
        "x = d * 2\n"
    )
    for _ in range(5):
        run_python(code, timeout=120)
