"""nn.DataParallel on neuron: a clear error pointing at DistributedDataParallel.

DataParallel scatters inputs and gathers outputs with single-process multi-device kernels PyTorch has only
for CUDA (``torch._C._scatter``), so on neuron it fails deep inside its forward. DDP is PyTorch's
recommended replacement anyway. With torchneuron installed, neuron is also the "available" accelerator that
DataParallel picks on a machine without CUDA, which would break DataParallel on CPU modules; for those it
keeps PyTorch's no-accelerator behaviour (the module runs as it is).
"""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch._utils import _get_available_device_type

MESSAGE = (
    "nn.DataParallel does not support the neuron device: it needs the single-process scatter/gather kernels "
    "PyTorch has only for CUDA. Use DistributedDataParallel with one process per NeuronCore instead "
    "(PyTorch's recommendation for CUDA too):\n"
    "    torchrun --nproc-per-node 2 train.py\n"
    "    # train.py\n"
    "    dist.init_process_group('neuron')\n"
    "    model = DistributedDataParallel(model.to('neuron'))\n"
    "See docs/distributed.md."
)


def _mentions_neuron(module: nn.Module, device_ids, output_device) -> bool:
    if device_ids is not None or output_device is not None:
        return True  # indices would be neuron indices here
    tensors = [*module.parameters(), *module.buffers()]
    return any(t.device.type == "neuron" for t in tensors)


def install() -> None:
    original = nn.DataParallel.__init__
    if getattr(original, "__torchneuron_wrapped__", False):
        return

    @functools.wraps(original)
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        if _get_available_device_type() != "neuron":  # CUDA (or another accelerator) does the work
            return original(self, module, device_ids, output_device, dim)
        if _mentions_neuron(module, device_ids, output_device):
            raise RuntimeError(MESSAGE)
        nn.Module.__init__(self)
        torch._C._log_api_usage_once("torch.nn.parallel.DataParallel")
        self.module = module
        self.device_ids = []

    __init__.__torchneuron_wrapped__ = True  # type: ignore[attr-defined]
    nn.DataParallel.__init__ = __init__  # type: ignore[method-assign]
