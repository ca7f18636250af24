"""`torch.library.opcheck` for ops on neuron tensors.

opcheck's `test_autograd_registration` raises NotImplementedError for any device but CPU/CUDA/XPU when an input
requires grad (torch 2.13, autograd_registration.py). For such inputs the other checks run through opcheck
and the property that check verifies (an autograd kernel is registered for the op, so autograd does not
fall through to the backend kernel) is asserted directly, the way it decides for CPU/CUDA.
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

ALL = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def opcheck(op: torch._ops.OpOverload, args: tuple, kwargs: dict | None = None, **kw) -> None:
    kwargs = kwargs or {}
    leaves = [t for t in pytree.arg_tree_leaves(*args, **kwargs) if isinstance(t, torch.Tensor)]
    if any(t.requires_grad for t in leaves):
        utils = tuple(u for u in ALL if u != "test_autograd_registration")
        torch.library.opcheck(op, args, kwargs, test_utils=utils, **kw)
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Autograd"), \
            f"{op.name()} has no autograd kernel: backward would run through the device kernel"
    else:
        torch.library.opcheck(op, args, kwargs, **kw)
