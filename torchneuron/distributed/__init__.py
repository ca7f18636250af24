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
    """Registers the backend with torch.distributed and nn.SyncBatchNorm's kernels (cheap: no device, no
    process group)."""
    from . import sync_batch_norm

    sync_batch_norm.register()
    if not dist.is_available() or BACKEND in dist.Backend.backend_list:
        return
    # "cpu" too: a group created with init_process_group("neuron") also takes CPU tensors (through the same
    # transport), as one created with "gloo" does; "cpu:gloo,neuron:neuron" still picks gloo for them.
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", BACKEND])


def describe() -> str:
    """One line for `python -m torchneuron info`."""
    if not dist.is_available():
        return "torch.distributed is not available in this PyTorch build"
    if BACKEND not in dist.Backend.backend_list:
        return 'c10d backend "neuron" not registered'
    from torchneuron import _C

    sim = _C._runtime_info()["runtime"] == "sim"
    transport = ("gloo on host views of device memory (simulator)" if sim
                 else "Neuron collectives through libnrt: not built yet")
    default = dist.Backend.default_device_backend_map.get(BACKEND) == BACKEND
    return (f'c10d backend "neuron" (init_process_group("neuron"){", the default for neuron" if default else ""})'
            f" over {transport}")
