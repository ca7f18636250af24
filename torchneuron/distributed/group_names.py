"""``ProcessGroup.name()`` and ``_get_sequence_number_for_group()`` for groups whose backend is neuron's.

PyTorch names a group by its default backend's *type*, and a plugin backend's type is CUSTOM: a neuron
group's ``name()`` is ``"custom"``, where an NCCL group's is ``"nccl"`` and AWS's neuron group's is
``"neuron"``; and ``ProcessGroup`` refuses sequence numbers for CUSTOM backends although the backend keeps
one (``PythonBackend::getSequenceNumberForGroup``, what TORCH_DISTRIBUTED_DEBUG=DETAIL compares).

``install`` (called when the first neuron group is created, so programs without one are untouched) wraps the
two ``ProcessGroup`` methods: for a group whose neuron backend is torchneuron's and whose name would be
``"custom"``, they answer from that backend; every other group gets PyTorch's answer.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

_installed = False
_NEURON = torch.device("neuron")


def _neuron_backend(pg: Any) -> Any:
    """The group's backend for the neuron device when it is torchneuron's, else None."""
    from torchneuron import _C

    try:
        backend = pg._get_backend(_NEURON)
    except (RuntimeError, ValueError):
        return None
    return backend if isinstance(backend, _C._PythonBackend) else None


def install() -> None:
    global _installed
    if _installed:
        return
    name = dist.ProcessGroup.name
    sequence_number = dist.ProcessGroup._get_sequence_number_for_group

    def group_name(self: Any) -> str:
        answer = name(self)
        if answer == "custom":
            backend = _neuron_backend(self)
            if backend is not None:
                return backend.name()
        return answer

    def group_sequence_number(self: Any) -> int:
        if self._get_backend_name() == "custom":
            backend = _neuron_backend(self)
            if backend is not None:
                return backend._get_sequence_number_for_group()
        return sequence_number(self)

    group_name.__doc__ = name.__doc__
    dist.ProcessGroup.name = group_name
    dist.ProcessGroup._get_sequence_number_for_group = group_sequence_number
    _installed = True
