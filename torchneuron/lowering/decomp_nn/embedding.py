"""embedding_bag and the functional ``embedding_renorm_`` behind ``max_norm``."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..decomp_common import arange, zeros
from ._common import _acc_dtype, _cast

aten = torch.ops.aten


def _embedding_bag(forward_only: bool) -> Callable:
    """Embedding bags with static shapes: the bag of each index position is the number of (bag-starting)
    offsets at or before it minus one, so a [bags, n] membership matrix (comparisons, no data-dependent
    shapes) turns sum/mean into a matmul over the gathered rows and max into a masked reduction. The
    auxiliary outputs (offset2bag, bag_size, max_indices) reproduce the CPU kernel's, including which ones
    it leaves empty or zero per mode."""
    def decomp(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
               per_sample_weights=None, include_last_offset=False, padding_idx=-1):
        if indices.dim() != 1:
            return NotImplemented  # F.embedding_bag flattens 2-d input before reaching ATen
        n, dim = indices.shape[0], weight.shape[1]
        bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
        idt, dev = indices.dtype, weight.device
        acc = _acc_dtype(weight.dtype)
        rows = _cast(aten.index_select.default(weight, 0, indices), acc)  # [n, dim]
        pos = aten.unsqueeze.default(arange(n, dev), 1)
        starts = aten.unsqueeze.default(_cast(aten.slice.Tensor(offsets, 0, 0, bags), torch.int64), 0)
        bag_of = aten.sub.Tensor(aten.sum.dim_IntList(_cast(aten.le.Tensor(starts, pos), torch.int64), [1]), 1)
        member = aten.eq.Tensor(aten.unsqueeze.default(bag_of, 0), aten.unsqueeze.default(arange(bags, dev), 1))
        if padding_idx is not None and padding_idx >= 0:
            member = aten.logical_and.default(member, aten.unsqueeze.default(aten.ne.Scalar(indices, padding_idx), 0))
        count = aten.sum.dim_IntList(_cast(member, torch.int64), [1])  # [bags]
        summed = member
        if include_last_offset and mode != 2 and not (padding_idx is not None and padding_idx >= 0):
            # the CPU fast path (sum/mean, no padding index) ends the last bag at the final offset, while
            # its bag sizes (the mean's divisor) run to the end of ``indices``
            end = _cast(aten.slice.Tensor(offsets, 0, bags, bags + 1), torch.int64)
            before_end = aten.lt.Tensor(aten.unsqueeze.default(arange(n, dev), 0), aten.unsqueeze.default(end, 0))
            summed = aten.logical_and.default(member, before_end)
        weights = _cast(summed, acc)
        if mode == 0 and per_sample_weights is not None:
            weights = aten.mul.Tensor(weights, aten.unsqueeze.default(_cast(per_sample_weights, acc), 0))
        if mode == 2:
            neg_inf = aten.scalar_tensor.default(float("-inf"), dtype=acc, device=dev)
            cand = aten.where.self(aten.unsqueeze.default(member, 2), aten.unsqueeze.default(rows, 0), neg_inf)
            best = aten.amax.default(cand, [1])  # [bags, dim]
            hit = aten.logical_and.default(aten.eq.Tensor(cand, aten.unsqueeze.default(best, 1)),
                                           aten.unsqueeze.default(member, 2))
            slot = aten.argmax.default(_cast(hit, torch.int32), 1)  # first position holding the maximum
            nonempty = aten.unsqueeze.default(aten.gt.Scalar(count, 0), 1)
            out = aten.where.self(nonempty, best, aten.zeros_like.default(best))
            picked = aten.index_select.default(indices, 0, aten.reshape.default(slot, [-1]))
            max_indices = aten.where.self(nonempty, aten.reshape.default(picked, [bags, dim]),
                                          aten.zeros_like.default(aten.reshape.default(picked, [bags, dim])))
        else:
            out = aten.mm.default(weights, rows)
            if mode == 1:
                out = aten.div.Tensor(out, aten.unsqueeze.default(_cast(aten.clamp_min.default(count, 1), acc), 1))
        out = _cast(out, weight.dtype)
        count = _cast(count, idt)
        if mode == 0:  # sum: the kernel fills no bag sizes, and offset2bag only with a padding index
            aux = offsets.shape[0] if forward_only else bags
            bag_size = zeros([aux], idt, dev)
            max_indices = zeros([aux], idt, dev)
            offset2bag = _cast(bag_of, idt) if padding_idx is not None and padding_idx >= 0 \
                else zeros([0], idt, dev)
        else:
            bag_size = count
            offset2bag = _cast(bag_of, idt)
            if mode == 1:
                max_indices = aten.clone.default(count)
        return out, offset2bag, bag_size, max_indices
    return decomp


def _embedding_renorm(weight, indices, max_norm, norm_type):
    """Functional ``embedding_renorm_`` (``max_norm`` of embedding/embedding_bag): the rows ``indices``
    touches whose p-norm exceeds max_norm are scaled by max_norm / (norm + 1e-7). Which rows are touched
    is a [rows, n] comparison, so no unique/sort of the indices is needed."""
    rows = weight.shape[0]
    if indices.numel() == 0 or weight.numel() == 0:
        return aten.clone.default(weight)
    flat = aten.reshape.default(indices, [1, -1])
    touched = aten.any.dim(aten.eq.Tensor(aten.unsqueeze.default(arange(rows, weight.device), 1), flat), 1)
    acc = _acc_dtype(weight.dtype)
    norm = aten.linalg_vector_norm.default(_cast(weight, acc), norm_type, [1], True)
    scale = aten.div.Tensor(aten.scalar_tensor.default(max_norm, dtype=acc, device=weight.device),
                            aten.add.Tensor(norm, 1e-7))
    rescale = aten.logical_and.default(aten.unsqueeze.default(touched, 1), aten.gt.Scalar(norm, max_norm))
    return aten.where.self(rescale, aten.mul.Tensor(weight, _cast(scale, weight.dtype)), weight)
