"""Helpers shared by the indexing decompositions: broadcasting a 1-D tensor along a dim and the log-step
scan (``_scan``)."""

from __future__ import annotations

from collections.abc import Callable

import torch


def _along(v: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    """A 1-D tensor reshaped to broadcast along ``dim`` of an ``ndim``-d tensor."""
    shape = [1] * ndim
    shape[dim] = v.shape[0]
    return v.reshape(shape)


def _shift_combine(state: tuple, dim: int, d: int, combine: Callable) -> tuple:
    """One Hillis–Steele step: element k becomes combine(element k-d, element k) for k >= d."""
    n = state[0].shape[dim]
    left = tuple(s.narrow(dim, 0, n - d) for s in state)
    right = tuple(s.narrow(dim, d, n - d) for s in state)
    merged = combine(left, right)
    return tuple(torch.cat([s.narrow(dim, 0, d), m], dim) for s, m in zip(state, merged))


def _scan(state: tuple, dim: int, combine: Callable) -> tuple:
    """Inclusive scan of a tuple of same-shaped tensors along ``dim`` (combine(left, right) -> tuple)."""
    n = state[0].shape[dim]
    d = 1
    while d < n:
        state = _shift_combine(state, dim, d, combine)
        d *= 2
    return state
