"""The kernel library: NKI kernels, each with a NumPy reference (`nki_ops.<kernel module>`), registered as
torch custom ops with their backward (`nki_ops.torch_ops`, `torch.ops.nki_ops.*`), and `patch(model)` /
`unpatch(model)` to run a model's layers on them.

Importing a kernel module needs only the simulator (NumPy + ml_dtypes); the torch ops and `patch` load
torch and the neuron device when first used.
"""

from __future__ import annotations

from typing import Any

KERNELS = ("add", "matmul", "transpose", "softmax", "rmsnorm", "layernorm", "attention", "rotary", "adamw")


def patch(model: Any) -> int:
    """Swap the model's LayerNorm / RMSNorm / Linear / Softmax modules and causal SDPA calls for the NKI ops;
    returns how many modules were swapped, the model counting once for its attention calls (see
    `nki_ops.patching`)."""
    from .patching import patch as _patch

    return _patch(model)


def unpatch(model: Any) -> int:
    """Restore every module `patch` swapped; returns how many."""
    from .patching import unpatch as _unpatch

    return _unpatch(model)
