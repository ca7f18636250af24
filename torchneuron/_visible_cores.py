"""NEURON_RT_VISIBLE_CORES and NEURON_RT_NUM_CORES on the simulator: the process sees some of the simulated
NeuronCores, as libnrt gives a process on a Trn host.

As with libnrt (and CUDA_VISIBLE_DEVICES), the visible cores are renumbered from neuron:0, so two processes
given ``0-1`` and ``2-3`` each see two devices. ``NEURON_RT_NUM_CORES=n`` asks for n cores (libnrt: n free
ones; the simulator has no other process holding cores, so the first n); NEURON_RT_VISIBLE_CORES wins when
both are set, and 0 means all, as in libnrt. The simulated machine's size is the target's logical core count
(or TORCHNEURON_SIM_DEVICES); asking for a core outside it is an error naming both.
"""

from __future__ import annotations

from torchneuron import _env


def parse(spec: str, total: int) -> list[int]:
    """Core indices of a spec such as "3", "0-3" or "0,2,4-5", checked against ``total`` cores."""
    cores: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"NEURON_RT_VISIBLE_CORES={spec!r}: expected core indices and ranges such as "
                             "'0', '0-3' or '0,2,4-5'") from None
        if first > last or first < 0:
            raise ValueError(f"NEURON_RT_VISIBLE_CORES={spec!r}: {part!r} is not a range of core indices")
        cores.extend(range(first, last + 1))
    if not cores:
        raise ValueError(f"NEURON_RT_VISIBLE_CORES={spec!r} names no core")
    if len(set(cores)) != len(cores):
        raise ValueError(f"NEURON_RT_VISIBLE_CORES={spec!r} names a core twice")
    outside = [c for c in cores if c >= total]
    if outside:
        raise ValueError(f"NEURON_RT_VISIBLE_CORES={spec!r}: core {outside[0]} does not exist, the simulated "
                         f"machine has {total} NeuronCores (0-{total - 1}); TORCHNEURON_SIM_DEVICES sets how many "
                         "it has")
    return cores


def parse_count(spec: str, total: int) -> list[int]:
    """The cores NEURON_RT_NUM_CORES=spec gives on a machine of ``total`` cores (0: all of them)."""
    try:
        n = int(spec)
    except ValueError:
        raise ValueError(f"NEURON_RT_NUM_CORES={spec!r}: expected a number of NeuronCores such as '2'") from None
    if n < 0:
        raise ValueError(f"NEURON_RT_NUM_CORES={spec!r}: expected 0 (all) or a positive number of NeuronCores")
    if n > total:
        raise ValueError(f"NEURON_RT_NUM_CORES={spec!r}: the simulated machine has {total} NeuronCores; "
                         "TORCHNEURON_SIM_DEVICES sets how many it has")
    return list(range(n or total))


def restricted() -> bool:
    """Whether NEURON_RT_VISIBLE_CORES or NEURON_RT_NUM_CORES limits the cores this process sees."""
    return bool(_env.get(_env.VISIBLE_CORES).strip()) or _env.get(_env.NUM_CORES).strip() not in ("", "0")


def visible_cores(total: int) -> list[int] | None:
    """The simulated cores this process sees, or None when neither variable limits them."""
    spec = _env.get(_env.VISIBLE_CORES).strip()
    if spec:
        return parse(spec, total)
    count = _env.get(_env.NUM_CORES).strip()
    return parse_count(count, total) if count not in ("", "0") else None


def describe(cores: list[int]) -> str:
    runs: list[str] = []
    start = prev = cores[0]
    for c in cores[1:] + [None]:  # type: ignore[list-item]
        if c is not None and c == prev + 1:
            prev = c
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if c is not None:
            start = prev = c
    return ",".join(runs)
