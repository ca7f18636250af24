"""roll and narrow_copy as slices."""

from __future__ import annotations

import torch


def _roll(self, shifts, dims=()):
    """roll as two slices and a cat per rolled dim (torch-mlir's own lowering mis-sizes a zero shift)."""
    if self.numel() == 0:
        return self.clone()
    if len(dims) == 0:  # roll the flattened tensor
        return _roll(self.reshape(-1), shifts, [0]).reshape(self.shape)
    out = self
    for shift, dim in zip(shifts, dims):
        dim = dim % self.dim()
        n = self.shape[dim]
        s = shift % n
        if s:
            out = torch.cat([out.narrow(dim, n - s, s), out.narrow(dim, 0, n - s)], dim)
    return out.clone() if out is self else out


def _narrow_copy(self, dim, start, length):
    """narrow_copy as a slice + clone; an empty result is built directly (torch-mlir mis-types a zero-length
    slice)."""
    dim = dim % max(self.dim(), 1)
    if length == 0:
        shape = list(self.shape)
        shape[dim] = 0
        return torch.zeros(shape, dtype=self.dtype, device=self.device)
    start = start % self.shape[dim] if start < 0 else start
    return self.narrow(dim, start, length).clone()
