"""``torch_neuronx.memory``: allocator statistics under AWS's names and under CUDA's.

AWS's ``memory_stats()`` is a nested dict (``stats["allocated_bytes"]["current"]``, ``"num_ooms"``,
``"allocation_requests"``, ``"num_tensor_frees"``); code written for ``torch.cuda`` reads the flat keys
(``stats["allocated_bytes.all.current"]``). The dict returned here holds both, with the same numbers: they
come from one caching allocator (torch.neuron.memory_stats).
"""

from __future__ import annotations

from typing import Any

from torchneuron.device import memory as _memory
from torchneuron.device.memory import (  # noqa: F401  (AWS exports these names from torch_neuronx.memory)
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)

# AWS's byte statistics: each a {current, peak, allocated, freed} dict, read from CUDA's "<name>.all.<field>".
_BYTE_STATS = ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes", "inactive_split_bytes")
_FIELDS = ("current", "peak", "allocated", "freed")


def memory_stats(device: Any = None) -> dict[str, Any]:
    """CUDA's flat statistics plus AWS's nested ones (see the module docstring)."""
    flat = _memory.memory_stats(device)
    stats: dict[str, Any] = dict(flat)
    for name in _BYTE_STATS:
        stats[name] = {f: int(flat.get(f"{name}.all.{f}", 0)) for f in _FIELDS}
    # AWS's counters: allocation requests and frees are CUDA's "allocation.all.allocated" / ".freed".
    stats["allocation_requests"] = int(flat.get("allocation.all.allocated", 0))
    stats["num_tensor_frees"] = int(flat.get("allocation.all.freed", 0))
    stats.setdefault("num_ooms", 0)
    stats.setdefault("num_alloc_retries", 0)
    return stats


__all__ = ["empty_cache", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "memory_summary", "reset_accumulated_memory_stats", "reset_peak_memory_stats"]
