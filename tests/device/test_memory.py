"""Caching allocator statistics behave as torch.cuda's do."""

import re

import pytest
import torch

from tests.helpers import run_python

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _clean_cache():
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    torch.neuron.reset_peak_memory_stats()
    yield
    torch.neuron.empty_cache()


def test_allocate_free_peak_reset():
    base = torch.neuron.memory_allocated()
    x = torch.empty(4 * MiB, dtype=torch.uint8, device="neuron")
    assert torch.neuron.memory_allocated() == base + 4 * MiB
    y = torch.empty(MiB, dtype=torch.uint8, device="neuron")
    peak = torch.neuron.max_memory_allocated()
    assert peak >= base + 5 * MiB
    del x, y
    assert torch.neuron.memory_allocated() == base
    assert torch.neuron.max_memory_allocated() == peak  # the peak survives frees
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == base


def test_reserved_is_cached_and_empty_cache_releases_it():
    x = torch.empty(30 * MiB, dtype=torch.uint8, device="neuron")
    reserved = torch.neuron.memory_reserved()
    assert reserved >= 30 * MiB
    del x
    assert torch.neuron.memory_reserved() == reserved  # cached, not returned
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() < reserved


def test_stats_names_match_cuda():
    x = torch.empty(100, device="neuron")  # noqa: F841
    stats = torch.neuron.memory_stats()
    for key in (
        "allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
        "reserved_bytes.large_pool.peak", "active_bytes.small_pool.current", "requested_bytes.all.current",
        "allocation.all.current", "segment.all.current", "inactive_split_bytes.all.current",
        "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
    ):
        assert key in stats, key
    assert stats["requested_bytes.all.current"] <= stats["allocated_bytes.all.current"]
    assert stats["allocated_bytes.all.current"] <= stats["reserved_bytes.all.current"]
    # torch.accelerator reads the same allocator
    assert torch.accelerator.memory_allocated(0) == torch.neuron.memory_allocated(0)


def test_small_blocks_split_and_reuse():
    a = torch.empty(1000, dtype=torch.uint8, device="neuron")
    stats = torch.neuron.memory_stats()
    assert stats["segment.small_pool.current"] >= 1
    assert stats["inactive_split.small_pool.current"] >= 1  # the rest of the 2 MiB segment
    ptr = a.data_ptr()
    del a
    b = torch.empty(1000, dtype=torch.uint8, device="neuron")
    assert b.data_ptr() == ptr  # the cached block comes back


def test_block_is_reused_only_on_its_stream_until_record_stream_clears():
    s = torch.neuron.Stream()
    x = torch.empty(MiB * 3, dtype=torch.uint8, device="neuron")
    ptr = x.data_ptr()
    with torch.neuron.stream(s):
        y = torch.empty(MiB * 3, dtype=torch.uint8, device="neuron")
    assert y.data_ptr() != ptr
    x.record_stream(s)
    del x
    torch.neuron.synchronize()
    z = torch.empty(MiB * 3, dtype=torch.uint8, device="neuron")
    assert z.data_ptr() == ptr  # reusable once the other stream's work completed


def test_oom_message_names_device_request_allocated_and_limit():
    torch.neuron.set_per_process_memory_fraction(0.001, 1)  # ~24 MiB on neuron:1
    try:
        keep = torch.empty(8 * MiB, dtype=torch.uint8, device="neuron:1")
        before = torch.neuron.memory_stats(1)
        with pytest.raises(torch.OutOfMemoryError) as err:
            torch.empty(64 * MiB, dtype=torch.uint8, device="neuron:1")
        msg = str(err.value)
        assert "neuron:1 out of memory" in msg
        assert "64.00 MiB" in msg  # the request
        assert "8.00 MiB is allocated" in msg
        assert "limited to" in msg and "24.00 GiB" in msg  # the limit and the device capacity
        after = torch.neuron.memory_stats(1)
        assert after["num_ooms"] == before["num_ooms"] + 1
        assert after["num_alloc_retries"] == before["num_alloc_retries"] + 1
        del keep
    finally:
        torch.neuron.set_per_process_memory_fraction(1.0, 1)


@pytest.mark.sim_only  # the simulator's configuration
def test_capacity_from_target_in_fresh_process():
    code = (
        "import torch, torchneuron;"
        "p = torch.neuron.get_device_properties(0);"
        "print(torch.neuron.device_count(), p.total_memory, p.target)"
    )
    out = run_python(code, clean=True, TORCHNEURON_TARGET="trn1")
    count, total, target = out.stdout.split()
    assert (int(count), int(total), target) == (2, 16 << 30, "trn1")


def test_summary_is_printable():
    x = torch.empty(10, device="neuron")  # noqa: F841
    text = torch.neuron.memory_summary()
    assert "Allocated memory" in text and "neuron:0" in text


def test_reset_accumulated_stats():
    x = torch.empty(MiB, dtype=torch.uint8, device="neuron")
    del x
    assert torch.neuron.memory_stats()["allocation.all.allocated"] > 0
    torch.neuron.reset_accumulated_memory_stats()
    stats = torch.neuron.memory_stats()
    assert stats["allocation.all.allocated"] == 0 and stats["allocation.all.freed"] == 0
    assert stats["num_device_alloc"] == 0


def test_oom_for_an_impossible_request_shows_sane_sizes():
    before = torch.neuron.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError) as err:
        torch.empty(2**63 - 1, dtype=torch.uint8, device="neuron")
    msg = str(err.value)
    # 2**63 - 1 bytes rounds to a 2**63-byte segment: once printed as a negative number of bytes
    assert "neuron:0 out of memory: tried to allocate 8.00 EiB (a 8.00 EiB segment)" in msg
    assert not re.search(r"-\d", msg), msg
    assert "has a limit of" in msg and "is allocated by tensors" in msg
    assert torch.neuron.memory_stats()["num_ooms"] == before + 1
    x = torch.ones(1000, device="neuron")  # the allocator is unharmed
    assert x.sum().item() == 1000


@pytest.mark.sim_only  # the simulator's device memory is host memory
def test_oom_when_host_memory_cannot_back_the_simulated_device_says_so():
    # An address-space limit 1 GiB above what the process uses: a 4 GiB tensor is within neuron:0's limit,
    # but the host cannot supply it.
    code = """
        import resource, torch, torchneuron
        torch.ones(1, device="neuron").sum().item()  # the runtime and its threads first
        vm_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm_kib * 1024 + (1 << 30), resource.RLIM_INFINITY))
        try:
            torch.empty(4 << 30, dtype=torch.uint8, device="neuron")
        except torch.OutOfMemoryError as e:  # user code that catches OOM keeps working
            print("OOM", e)
        print("after", torch.ones(1000, device="neuron").sum().item())
    """
    out = run_python(code, timeout=120).stdout
    msg = out.split("OOM ", 1)[1]
    assert msg.startswith("neuron:0 out of memory: host memory could not back the simulated device memory"), msg
    assert "4.00 GiB" in msg and "24.00 GiB" in msg  # the request and neuron:0's limit
    assert "RLIMIT_AS" in msg and "TORCHNEURON_SIM_HBM_MB" in msg and "Lower the request" in msg
    assert "after 1000.0" in out
