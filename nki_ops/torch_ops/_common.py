"""What the op registrations share: the namespace, shape folding and argument checks."""

from __future__ import annotations

import torch

NAMESPACE = "nki_ops"


def rows(x: torch.Tensor) -> torch.Tensor:
    """[..., cols] as [rows, cols] (a view when x is contiguous)."""
    return x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x


def check_same_dtype(op: str, **tensors: torch.Tensor | None) -> None:
    given = {k: v for k, v in tensors.items() if v is not None}
    dtypes = {v.dtype for v in given.values()}
    if len(dtypes) > 1:
        listed = ", ".join(f"{k}: {v.dtype}" for k, v in given.items())
        raise TypeError(f"nki_ops.{op}: the operands must share one dtype on the Tensor engine, got {listed}. "
                        "Cast them first (or run under torch.autocast('neuron')).")


def check_last_dim(op: str, x: torch.Tensor, vec: torch.Tensor | None, name: str) -> None:
    if vec is not None and (vec.dim() != 1 or vec.shape[0] != x.shape[-1]):
        raise ValueError(f"nki_ops.{op}: {name} must have shape ({x.shape[-1]},) to match the input's last dim, "
                         f"got {tuple(vec.shape)}.")
