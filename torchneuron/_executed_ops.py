"""What ran on the neuron device: op name -> number of executions in this process."""

from __future__ import annotations

from torchneuron import _C


def executed_ops() -> dict[str, int]:
    """Ops executed on neuron since start (or the last reset), e.g. {'aten::add.Tensor': 3}."""
    return dict(_C._executed_ops())


def reset_executed_ops() -> None:
    _C._reset_executed_ops()
