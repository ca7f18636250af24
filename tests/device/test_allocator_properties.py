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


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 80 * KiB)), min_size=10, max_size=60))
def test_small_blocks_parked_and_merged_keep_stats_and_contents(ops):
    # Small frees park their block whole (and merge it later): contents of live tensors never change, stats
    # track live blocks, and once all are freed empty_cache gives back every segment.
    gc.collect()
    gc.disable()
    try:
        torch.neuron.synchronize()
        torch.neuron.empty_cache()
        base = torch.neuron.memory_stats()
        live: list[tuple[torch.Tensor, int]] = []
        for i, (action, nbytes) in enumerate(ops):
            if action == 0 and live:
                live.pop(nbytes % len(live))
            else:
                live.append((torch.full((nbytes,), i % 251, dtype=torch.uint8, device="neuron"), i % 251))
            stats = torch.neuron.memory_stats()
            live_bytes = sum(_round(t.numel()) for t, _ in live)
            assert stats["allocated_bytes.all.current"] - base["allocated_bytes.all.current"] == live_bytes
            assert stats["active_bytes.all.current"] - base["active_bytes.all.current"] == live_bytes
        assert all(bool((t == value).all()) for t, value in live)
        live.clear()
        torch.neuron.empty_cache()
        end = torch.neuron.memory_stats()
        for key in ("allocated_bytes.all.current", "reserved_bytes.all.current", "inactive_split.all.current",
                    "inactive_split_bytes.all.current", "active.all.current"):
            assert end[key] == base[key], key
    finally:
        gc.enable()


def test_parked_blocks_merge_before_a_new_segment_is_taken():
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    with torch.neuron.stream(torch.neuron.Stream()):  # a stream of its own: its blocks are only this test's
        blocks = [torch.empty(16 * KiB, dtype=torch.uint8, device="neuron") for _ in range(128)]  # one 2 MiB segment
        segments = torch.neuron.memory_stats()["num_device_alloc"]
        # the last frees (parked, unmerged) are spread over the segment: no free run of 1 MiB without them
        last = set(range(8, 128, 16))
        for i in [i for i in range(128) if i not in last] + sorted(last):
            blocks[i] = None
        big = torch.empty(1 << 20, dtype=torch.uint8, device="neuron")
        assert torch.neuron.memory_stats()["num_device_alloc"] == segments
        del big, blocks
    torch.neuron.synchronize()
    torch.neuron.empty_cache()


def test_block_parked_next_to_the_one_it_displaces():
    # Eight frees fill the parked blocks; the ninth displaces the oldest, its own neighbour, which merges
    # with what is free around it but not with the block being parked.
    with torch.neuron.stream(torch.neuron.Stream()):
        blocks = [torch.full((KiB,), i, dtype=torch.uint8, device="neuron") for i in range(10)]
        for i in (0, 2, 3, 4, 5, 6, 7, 8, 1):
            blocks[i] = None
        again = [torch.full((KiB,), 100 + i, dtype=torch.uint8, device="neuron") for i in range(9)]
        assert int(blocks[9][0]) == 9 and [int(t[0]) for t in again] == list(range(100, 109))
        assert len({t.data_ptr() for t in again} | {blocks[9].data_ptr()}) == 10
        del again, blocks
    torch.neuron.synchronize()
    torch.neuron.empty_cache()


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
