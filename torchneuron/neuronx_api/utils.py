"""``torch_neuronx.utils``: facts about the platform the programs are built for."""

from __future__ import annotations


def get_platform_target() -> str:
    """The Trainium generation compiled for: ``"trn2"``, ``"trn3"`` (on the simulator, the simulated one:
    ``TORCHNEURON_TARGET``; on a Trn host, the instance's)."""
    from torchneuron import targets

    return targets.current().name


__all__ = ["get_platform_target"]
