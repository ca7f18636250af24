"""searchsorted by vectorised bisection (``_binary_search``, also used by histograms and segment_reduce)."""

from __future__ import annotations

import torch


def _binary_search(seq, values, right: bool):
    """PyTorch's lower/upper bound for each of ``values`` in the last dim of ``seq`` (1-D, or with the same
    leading dims as ``values``), as a fixed number of vectorised bisection steps. The predicate is PyTorch's
    (go right while ``!(seq[mid] >= v)``, resp. ``!(seq[mid] > v)``), so NaNs end up where PyTorch puts
    them. O(numel(values) * log n)."""
    n = seq.shape[-1]
    start = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    end = torch.full(values.shape, n, dtype=torch.int64, device=values.device)
    for _ in range(n.bit_length()):  # each step at least halves end - start, which starts at n
        mid = start + torch.div(end - start, 2, rounding_mode="floor")
        at = mid.clamp(max=n - 1)
        if seq.dim() == 1:
            pivot = seq.index_select(0, at.reshape(-1)).reshape(at.shape)
        else:
            pivot = seq.gather(-1, at)
        go_right = ~(pivot > values) if right else ~(pivot >= values)
        active = start < end
        start = torch.where(active & go_right, mid + 1, start)
        end = torch.where(active & ~go_right, mid, end)
    return start


def _searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted by vectorised bisection (``_binary_search``); ``sorter`` permutes the sequence first."""
    right = bool(right) or side == "right"
    out_dtype = torch.int32 if out_int32 else torch.int64
    if not isinstance(self, torch.Tensor):  # the Scalar overload: compared in the promoted dtype, as PyTorch
        self = torch.full((), self, dtype=torch.result_type(sorted_sequence, self), device=sorted_sequence.device)
    values = self
    seq = sorted_sequence if sorter is None else sorted_sequence.gather(-1, sorter.to(torch.int64))
    if values.numel() == 0 or seq.shape[-1] == 0:
        return torch.zeros(values.shape, dtype=out_dtype, device=values.device)
    return _binary_search(seq, values, right).to(out_dtype)


def _searchsorted_scalar(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    return _searchsorted(sorted_sequence, self, out_int32=out_int32, right=right, side=side, sorter=sorter)
