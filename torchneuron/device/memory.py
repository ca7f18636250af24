"""Caching-allocator statistics and control, with torch.cuda.memory's names and meanings."""

from __future__ import annotations

import collections
from typing import Any

from torchneuron import _C
from torchneuron.device._device import _index
from torchneuron.device._lazy import _lazy_init, is_initialized


def memory_stats_as_nested_dict(device: Any = None) -> dict[str, Any]:
    if not is_initialized():
        return {}
    return _C._memory_stats(_index(device))


def memory_stats(device: Any = None) -> dict[str, Any]:
    """Flat dict such as {'allocated_bytes.all.current': ..., 'num_ooms': ...}, sorted by key like CUDA's."""
    result: list[tuple[str, Any]] = []

    def flatten(prefix: str, obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                flatten(f"{prefix}.{k}" if prefix else k, v)
        else:
            result.append((prefix, obj))

    flatten("", memory_stats_as_nested_dict(device))
    return collections.OrderedDict(sorted(result))


def _stat(key: str, device: Any) -> int:
    return int(memory_stats(device).get(key, 0))


def memory_allocated(device: Any = None) -> int:
    return _stat("allocated_bytes.all.current", device)


def max_memory_allocated(device: Any = None) -> int:
    return _stat("allocated_bytes.all.peak", device)


def memory_reserved(device: Any = None) -> int:
    return _stat("reserved_bytes.all.current", device)


def max_memory_reserved(device: Any = None) -> int:
    return _stat("reserved_bytes.all.peak", device)


def reset_peak_memory_stats(device: Any = None) -> None:
    _lazy_init()
    _C._reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _lazy_init()
    _C._reset_accumulated_memory_stats(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Returns cached, unused device memory to the runtime (lowers memory_reserved)."""
    if is_initialized():
        _C._empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of device memory, as the runtime sees it."""
    _lazy_init()
    return tuple(_C._mem_get_info(_index(device)))  # type: ignore[return-value]


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Caps what the caching allocator may reserve on `device` to `fraction` of its capacity."""
    _lazy_init()
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    _C._set_memory_fraction(fraction, _index(device))


def host_memory_stats() -> dict[str, int]:
    return dict(_C._host_memory_stats())


def _fmt(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.2f} {unit}"
        nbytes /= 1024
    return str(nbytes)


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A printable table of the allocator's statistics (like torch.cuda.memory_summary)."""
    stats = memory_stats(device)
    idx = _index(device) if is_initialized() else 0
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Segments", "segment", False),
    ]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    width = 75
    lines = ["=" * width, f" neuron:{idx} memory summary".ljust(width), "-" * width]
    lines.append(f"{'Metric':<28}{'Cur Usage':>12}{'Peak Usage':>12}{'Tot Alloc':>12}{'Tot Freed':>11}")
    for title, key, is_bytes in rows:
        lines.append("-" * width)
        for pool in pools:
            vals = [stats.get(f"{key}.{pool}.{f}", 0) for f in ("current", "peak", "allocated", "freed")]
            shown = [_fmt(v) if is_bytes else str(v) for v in vals]
            label = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            lines.append(f"{label:<28}{shown[0]:>12}{shown[1]:>12}{shown[2]:>12}{shown[3]:>11}")
    lines.append("-" * width)
    for key in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"):
        lines.append(f"{key:<28}{stats.get(key, 0):>12}")
    lines.append("=" * width)
    return "\n".join(lines)


def _no_history(name: str) -> RuntimeError:
    return RuntimeError(
        f"torch.neuron.memory.{name}: neuron's caching allocator keeps no allocation history or per-block "
        "records, so there is no snapshot for pytorch.org/memory_viz. memory_stats() and memory_summary() give "
        "its state (segments, allocations, peaks); torch.profiler(profile_memory=True) records allocations "
        "over time.")


def _record_memory_history(*args: Any, **kwargs: Any) -> None:
    raise _no_history("_record_memory_history")


def _snapshot(*args: Any, **kwargs: Any) -> dict[str, Any]:
    raise _no_history("_snapshot")


def _dump_snapshot(*args: Any, **kwargs: Any) -> None:
    raise _no_history("_dump_snapshot")


def memory_snapshot(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    raise _no_history("memory_snapshot")
