"""Which neuron device a process of a distributed job uses: one process per logical NeuronCore.

Under torchrun, LOCAL_RANK picks the device, as ``torch.cuda.set_device(local_rank)`` does in CUDA scripts:
creating the default process group makes neuron:LOCAL_RANK current, so ``torch.device("neuron")`` and
``neuron:{LOCAL_RANK}`` name the same core. A process that sees a single core (NEURON_RT_VISIBLE_CORES set
per process, as launchers on Trn hosts do) uses it whatever its LOCAL_RANK.
"""

from __future__ import annotations

import torch

from torchneuron import _env


def _int_env(name: str) -> int | None:
    value = _env.get(name).strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None


def local_device(count: int) -> int | None:
    """The device index LOCAL_RANK asks for, or None outside torchrun-style launches."""
    local_rank = _int_env(_env.LOCAL_RANK)
    if local_rank is None:
        return None
    if count == 1:
        return 0
    local_world = _int_env(_env.LOCAL_WORLD_SIZE)
    if local_rank >= count or (local_world is not None and local_world > count):
        procs = f"{local_world} processes" if local_world is not None else f"LOCAL_RANK={local_rank}"
        raise RuntimeError(
            f"neuron process group: {procs} on this host but it has {count} neuron devices (one process per "
            "logical NeuronCore). Start fewer processes (torchrun --nproc-per-node), or on the simulator give it "
            "more cores (TORCHNEURON_SIM_DEVICES, TORCHNEURON_TARGET) or each process its own slice "
            "(NEURON_RT_VISIBLE_CORES)")
    return local_rank


def select(first_group: bool) -> int:
    """Initialises the device and returns the index this process's collectives run on."""
    torch.neuron.init()
    index = local_device(torch.neuron.device_count())
    if index is None:
        return torch.neuron.current_device()
    if first_group:
        torch.neuron.set_device(index)
    return index
