"""Facts about each Trainium generation, in one table, and which generation this process targets.

Everything that depends on the generation asks here: the simulator's device count and HBM (handed to the
C++ runtime at configuration), the compiler's ``--target`` / ``--lnc``, the NKI simulator's target lookup,
and the contract fake of libnrt. The table is plain data that loads without torch or the rest of the package;
only ``configure`` reaches the environment, through ``torchneuron/_env.py``.

``TORCHNEURON_TARGET`` is read once, the first time the target is asked for (``configure`` at import of the
device layer, or ``current()`` without it). On the ``nrt`` runtime the target is the instance's, as libnrt's
``nrt_get_instance_info`` reports it: the device layer installs a resolver that asks the runtime.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

GiB = 1 << 30


@dataclass(frozen=True)
class Target:
    name: str                  # trn1 | trn2 | trn3: the neuronx-cc --target value
    instance: str              # the instance family a user sees, e.g. "trn2.48xlarge"
    core_generation: str       # NeuronCore generation as AWS names the hardware: NC-v2 | NC-v3 | NC-v4
    nki_generation: str        # the same generation as NKI spells it (nisa.get_nc_version): gen2 | gen3 | gen4
    logical_cores: int         # torch devices per chip at the default LNC
    lnc: int                   # default logical NeuronCore config: physical cores fused into one device
    chip_hbm_bytes: int        # HBM per chip; each device gets chip_hbm_bytes / logical_cores
    # libnrt's instance families (nrt.h, NRT_INSTANCE_*) whose NeuronCores are this generation.
    nrt_families: tuple[int, ...]

    @property
    def physical_cores(self) -> int:
        return self.logical_cores * self.lnc

    @property
    def hbm_bytes_per_device(self) -> int:
        return self.chip_hbm_bytes // self.logical_cores


TARGETS: dict[str, Target] = {
    # trn1 (and inf2, the same NeuronCore-v2): two cores per chip, 32 GiB HBM, no LNC fusion.
    # NRT_INSTANCE_TRN1 = 2, TRN1N = 3, INF2 = 4, INF2E = 7.
    "trn1": Target("trn1", "trn1.32xlarge", "NC-v2", "gen2", 2, 1, 32 * GiB, (2, 3, 4, 7)),
    # trn2: eight NeuronCore-v3 per chip shown as four logical cores at LNC=2, 96 GiB HBM.
    # NRT_INSTANCE_TRN2 = 5, TRN2N = 6, TRN2P = 8, TRN2U = 9, TRN2E = 10, TRN2EU = 11, TRN2AC = 12, TRN2UAC = 13.
    "trn2": Target("trn2", "trn2.48xlarge", "NC-v3", "gen3", 4, 2, 96 * GiB, (5, 6, 8, 9, 10, 11, 12, 13)),
    # trn3: eight NeuronCore-v4 per chip at LNC=2, 144 GiB HBM. NRT_INSTANCE_TRN3 = 14, TRN3PDS98 = 15.
    "trn3": Target("trn3", "trn3.48xlarge", "NC-v4", "gen4", 4, 2, 144 * GiB, (14, 15)),
}

_ALIASES = {t.nki_generation: t.name for t in TARGETS.values()}


class UnknownTarget(ValueError):
    pass


def named(name: str) -> Target:
    """The target called ``name`` (``trn1|trn2|trn3``, or NKI's ``gen2|gen3|gen4``)."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in TARGETS:
        raise UnknownTarget(f"unknown target {name!r}: use one of {', '.join(TARGETS)}")
    return TARGETS[key]


def for_nrt_family(family: int) -> Target | None:
    """The target of a libnrt instance family (``nrt_instance_info_t.family``), or None if not a Trainium one."""
    for t in TARGETS.values():
        if family in t.nrt_families:
            return t
    return None


_lock = threading.Lock()
_configured: Target | None = None
_resolver: Callable[[], str] | None = None
_resolved: Target | None = None


def configure(name: str | None = None) -> Target:
    """Fix the configured target once (``name`` or ``TORCHNEURON_TARGET``); later calls return it unchanged."""
    global _configured
    with _lock:
        if _configured is None:
            _configured = named(name) if name is not None else _from_environment()
        return _configured


def _from_environment() -> Target:
    """The target ``TORCHNEURON_TARGET`` names (unset or empty: its default in ``_env``)."""
    from torchneuron import _env  # here, not at the top: the table loads on its own (see the module docstring)

    default = _env.VARS[_env.TARGET].default
    try:
        return named(_env.get(_env.TARGET) or default)
    except UnknownTarget as e:
        raise UnknownTarget(f"{e} (set {_env.TARGET}, default {default})") from None


def set_resolver(resolver: Callable[[], str] | None) -> None:
    """Install how ``current()`` finds the target of the device actually in use (the nrt runtime asks libnrt)."""
    global _resolver, _resolved
    with _lock:
        _resolver, _resolved = resolver, None


def current() -> Target:
    """The target this process runs on: the nrt runtime's instance when it is in use, else the configured one."""
    global _resolved
    if _resolved is not None:
        return _resolved
    resolver = _resolver
    if resolver is not None:
        name = resolver()
        if name:
            with _lock:
                _resolved = named(name)
            return _resolved
    return configure()


def table() -> list[tuple]:
    """The table as plain tuples, the form the C++ runtime receives at configuration."""
    return [(t.name, t.instance, t.core_generation, t.logical_cores, t.lnc, t.chip_hbm_bytes, list(t.nrt_families))
            for t in TARGETS.values()]
