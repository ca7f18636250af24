"""Allocator invariants over random allocation/free sequences (hypothesis), and under threads."""

import gc
import threading

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

KiB = 1024


def _round(n: int) -> int:
    return max(512, (n + 511) // 512 * 512)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3 * 1024 * KiB)), min_size=1, max_size=40))
def test_stats_track_live_blocks(ops):
    # Tensors of earlier tests freed by the cyclic GC mid-example would move the stats under our feet.
    gc.collect()
    gc.disable()
    try:
        _check_stats_track_live_blocks(ops)
    finally:
        gc.enable()


def _check_stats_track_live_blocks(ops):
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    base = torch.neuron.memory_stats()
    live: list[torch.Tensor] = []
    for free_one, nbytes in ops:
        if free_one and live:
            live.pop(len(live) // 2)
        else:
            live.append(torch.empty(nbytes, dtype=torch.uint8, device="neuron"))
        stats = torch.neuron.memory_stats()
        expected = sum(_round(t.numel()) for t in live)
        assert stats["allocated_bytes.all.current"] - base["allocated_bytes.all.current"] == expected
        assert stats["requested_bytes.all.current"] - base["requested_bytes.all.current"] == sum(
            t.numel() for t in live)
        assert stats["allocation.all.current"] - base["allocation.all.current"] == len(live)
        assert stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
        assert (stats["allocated_bytes.small_pool.current"] + stats["allocated_bytes.large_pool.current"]
                == stats["allocated_bytes.all.current"])
        ptrs = sorted((t.data_ptr(), t.data_ptr() + _round(t.numel())) for t in live)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(ptrs, ptrs[1:]))  # no overlap
    live.clear()
    torch.neuron.empty_cache()
    end = torch.neuron.memory_stats()
    assert end["allocated_bytes.all.current"] == base["allocated_bytes.all.current"]
    assert end["reserved_bytes.all.current"] == base["reserved_bytes.all.current"]
    assert end["inactive_split_bytes.all.current"] == base["inactive_split_bytes.all.current"]


def test_concurrent_threads_allocate_and_free():
    errors = []

    def worker(seed: int) -> None:
        try:
            g = torch.Generator().manual_seed(seed)
            for _ in range(200):
                n = int(torch.randint(1, 200_000, (1,), generator=g))
                t = torch.empty(n, dtype=torch.uint8, device="neuron")
                t.fill_(seed % 256)
                assert int(t[-1].item()) == seed % 256
        except Exception as e:  # surfaced below: a thread's assertion must fail the test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    torch.neuron.empty_cache()
