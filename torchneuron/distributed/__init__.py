"""torch.distributed on neuron: the c10d backend "neuron".

``dist.init_process_group("neuron")`` (or ``"cpu:gloo,neuron:neuron"``, or no backend at all when neuron is
the accelerator) creates it; DDP, FSDP2, DTensor, functional collectives and torch.distributed.checkpoint use
it like NCCL. Importing this package only registers the backend's name: the device starts when a group is
created. See docs/distributed.md.
"""

from __future__ import annotations

import torch.distributed as dist

BACKEND = "neuron"


def _create(dist_opts, backend_opts):
    from .backend import create

    return create(dist_opts, backend_opts)


def register() -> None:
    """Registers the backend with torch.distributed (cheap: no device, no process group)."""
    if not dist.is_available() or BACKEND in dist.Backend.backend_list:
        return
    # "cpu" too: a group created with init_process_group("neuron") also takes CPU tensors (through the same
    # transport), as one created with "gloo" does; "cpu:gloo,neuron:neuron" still picks gloo for them.
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", BACKEND])


def describe() -> str:
    """One line for `python -m torchneuron info`."""
    if not dist.is_available():
        return "torch.distributed is not available in this PyTorch build"
    registered = BACKEND in dist.Backend.backend_list
    if not registered:
        return 'backend "neuron" not registered'
    from torchneuron import _C

    runtime = _C._runtime_info()["runtime"]
    transport = ("gloo on host views of device memory" if runtime == "sim"
                 else "Neuron collectives through libnrt (seam only: not built yet)")
    default = dist.Backend.default_device_backend_map.get(BACKEND)
    return (f'init_process_group("neuron"): c10d backend "neuron" for neuron (and CPU) tensors over {transport}'
            f"; default for neuron as accelerator: {default}")
