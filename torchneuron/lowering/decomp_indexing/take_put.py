"""take, put and boolean-mask index_put on the flattened tensor."""

from __future__ import annotations

import threading

import torch

aten = torch.ops.aten


def _take(self, index):
    """take: index_select on the flattened tensor (negative indices count from the end); PyTorch's own
    decomposition checks the bounds with a data-dependent branch."""
    flat = self.reshape(-1)
    idx = index.reshape(-1).to(torch.int64)
    idx = torch.where(idx < 0, idx + flat.shape[0], idx)
    return flat.index_select(0, idx).reshape(index.shape)


def _put(self, index, source, accumulate=False):
    """put: index_put on the flattened tensor (negative indices count from the end)."""
    flat = self.reshape(-1)
    idx = index.reshape(-1).to(torch.int64)
    idx = torch.where(idx < 0, idx + flat.shape[0], idx)
    out = aten.index_put.default(flat, [idx], source.reshape(-1).to(self.dtype), accumulate)
    return out.reshape(self.shape)


def _index_put_mask(self, indices, values, accumulate=False):
    """index_put with one boolean mask (``x[mask] = v``, after any leading ``None``): a ``where`` over the
    masked positions. torch-mlir turns a mask into ``nonzero`` (a data-dependent shape). When ``v`` has one
    row per selected element, the element of rank r (row-major among the True positions) takes row r,
    found with a cumsum of the mask. Integer-only indices go to torch-mlir's own lowering, negative ones
    wrapped first (``_index_put_int``)."""
    tensors = [i for i in indices if i is not None]
    if len(tensors) != 1 or tensors[0].dtype not in (torch.bool, torch.uint8):
        return _index_put_int(self, indices, values, accumulate)
    p = next(k for k, i in enumerate(indices) if i is not None)
    mask = tensors[0].to(torch.bool)
    m = mask.dim()
    rest = list(self.shape[p + m:])
    r = p + 1 + len(rest)  # rank of the indexed result: self[:p] + [count] + rest
    v = values.to(self.dtype).reshape([1] * (r - values.dim()) + list(values.shape))
    if v.shape[p] == 1:
        v = v.reshape(list(v.shape[:p]) + [1] * m + list(v.shape[p + 1:]))
    else:  # one row per True position, in row-major order of the mask
        rank = torch.cumsum(mask.reshape(-1).to(torch.int64), 0) - 1
        rank = rank.clamp(0, v.shape[p] - 1)
        v = v.index_select(p, rank).reshape(list(v.shape[:p]) + list(mask.shape) + list(v.shape[p + 1:]))
    v = v.expand(self.shape)
    where = mask.reshape([1] * p + list(mask.shape) + [1] * len(rest)).expand(self.shape)
    if accumulate:
        return torch.where(where, self + v, self)
    return torch.where(where, v, self)


_lowering_int = threading.local()


def _index_put_int(self, indices, values, accumulate=False):
    """index_put with integer indices: negative ones count from the end of their dim (``k[:, :, tensor([-1])]
    = v``, as Hugging Face's sliding-window cache writes). torch-mlir's scatter drops them as out of bounds.
    The wrapped call comes back here once and goes to torch-mlir's lowering (the flag)."""
    if getattr(_lowering_int, "active", False) or any(
            i is not None and (i.dtype in (torch.bool, torch.uint8) or i.is_floating_point()) for i in indices):
        return NotImplemented
    wrapped = [None if i is None else torch.where(i < 0, i + self.shape[d], i) for d, i in enumerate(indices)]
    _lowering_int.active = True
    try:
        return aten.index_put.default(self, wrapped, values, accumulate)
    finally:
        _lowering_int.active = False
