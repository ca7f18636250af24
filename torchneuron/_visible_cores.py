"""NEURON_RT_VISIBLE_CORES on the simulator: the process sees a slice of the simulated NeuronCores.

As with libnrt on a Trn host (and CUDA_VISIBLE_DEVICES), the visible cores are renumbered from neuron:0, so
two processes given ``0-1`` and ``2-3`` each see two devices. The simulated machine's size is the target's
core count (or TORCHNEURON_SIM_DEVICES); a core outside it is an error naming both.
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


def visible_cores(total: int) -> list[int] | None:
    """The simulated cores this process sees, or None when NEURON_RT_VISIBLE_CORES is unset."""
    spec = _env.get(_env.VISIBLE_CORES).strip()
    return parse(spec, total) if spec else None


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
