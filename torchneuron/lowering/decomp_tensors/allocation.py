"""Allocation: ``empty`` and its strided forms as zeros (a functional IR has no uninitialized memory)."""

from __future__ import annotations

from ..decomp_common import zeros


def _uninitialized(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """``empty``: any values are valid, and a functional IR has no uninitialized memory; torch-mlir's
    ``tensor.empty`` cannot be exported to XLA, so a broadcast zero stands in."""
    return zeros(size, dtype, device)


def _uninitialized_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None, **_):
    return _uninitialized(size, dtype=dtype, device=device)


def _prims_uninitialized_strided(shape, strides, *, dtype, device, requires_grad=False):
    return _uninitialized(shape, dtype=dtype, device=device)


def _uninitialized_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _uninitialized(self.shape, dtype=dtype or self.dtype, device=device)


def _new_uninitialized_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _uninitialized(size, dtype=dtype or self.dtype, device=device)


def _uninitialized_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _uninitialized(size, dtype=dtype, device=device)
