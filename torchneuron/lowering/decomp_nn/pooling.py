"""Adaptive, average, max and fractional max pooling (the 3-d forms and windows torch-mlir mis-sizes)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..decomp_common import arange, int_list, pool_out, zeros
from ._common import _acc_dtype, _cast, _select_along

aten = torch.ops.aten


def _adaptive_bounds(n_in: int, n_out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive pooling windows: [floor(o*n_in/n_out), ceil((o+1)*n_in/n_out))."""
    return [((o * n_in) // n_out, -((-(o + 1) * n_in) // n_out)) for o in range(n_out)]


def _adaptive_avg_along(x, dim: int, n_out: int):
    """Adaptive average over one dim: a reshape + mean when the windows tile the dim, otherwise a matmul
    with the (static) averaging matrix. Averages over boxes are separable, so N-d pooling is this per dim."""
    n_in = x.shape[dim]
    if n_in % n_out == 0:
        shape = list(x.shape)
        return aten.mean.dim(aten.reshape.default(x, shape[:dim] + [n_out, n_in // n_out] + shape[dim + 1:]),
                             [dim + 1])
    o = aten.unsqueeze.default(arange(n_out, x.device), 1)
    j = aten.unsqueeze.default(arange(n_in, x.device), 0)
    start = aten.div.Tensor_mode(aten.mul.Tensor(o, n_in), n_out, rounding_mode="floor")
    end = aten.neg.default(aten.div.Tensor_mode(aten.mul.Tensor(aten.add.Tensor(o, 1), -n_in), n_out,
                                                rounding_mode="floor"))
    inside = aten.logical_and.default(aten.ge.Tensor(j, start), aten.lt.Tensor(j, end))
    weights = aten.div.Tensor(_cast(inside, x.dtype), _cast(aten.sub.Tensor(end, start), x.dtype))  # [n_out, n_in]
    moved = aten.movedim.int(x, dim, -1)
    out = aten.matmul.default(moved, aten.t.default(weights))
    return aten.movedim.int(out, -1, dim)


def _adaptive_avg_pool(nd: int, native: bool) -> Callable:
    """Adaptive average pooling over the last ``nd`` dims, separably (see ``_adaptive_avg_along``), in the
    accumulation dtype. ``native``: torch-mlir lowers the case where every window tiles its dim itself."""
    def decomp(x, output_size):
        out_size = int_list(output_size, nd)
        spatial = list(x.shape[-nd:])
        if native and all(n % o == 0 for n, o in zip(spatial, out_size)) and x.numel() > 0:
            return NotImplemented
        if x.numel() == 0 or 0 in out_size:
            return zeros(list(x.shape[:-nd]) + out_size, x.dtype, x.device)
        y = _cast(x, _acc_dtype(x.dtype))
        for i in range(nd):
            y = _adaptive_avg_along(y, x.dim() - nd + i, out_size[i])
        return _cast(y, x.dtype)
    return decomp


def _avg_pool3d(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    """Average pooling as a depthwise convolution with a ones kernel (window sums) divided by the window
    counts PyTorch uses (a convolution of the validity mask), which covers ceil mode, count_include_pad and
    divisor_override; torch-mlir's reduce_window lowering mis-sizes ceil-mode windows."""
    nd = 3
    k, p = int_list(kernel_size, nd), int_list(padding, nd)
    st = int_list(stride, nd) if stride else k
    unbatched = x.dim() == nd + 1
    if unbatched:
        x = aten.unsqueeze.default(x, 0)
    n, c = x.shape[:2]
    sizes = list(x.shape[2:])
    outs = [pool_out(sizes[i], k[i], st[i], p[i], 1, ceil_mode) for i in range(nd)]
    if x.numel() == 0:
        out = zeros([n, c] + outs, x.dtype, x.device)
        return aten.squeeze.dim(out, 0) if unbatched else out
    extra = [max(0, (outs[i] - 1) * st[i] + k[i] - (sizes[i] + 2 * p[i])) for i in range(nd)]
    acc = _acc_dtype(x.dtype)
    xa = _cast(x, acc)

    def pad_list(lo, hi):  # constant_pad_nd order: last dim first
        return [v for i in reversed(range(nd)) for v in (lo[i], hi[i])]

    padded = aten.constant_pad_nd.default(xa, pad_list(p, [p[i] + extra[i] for i in range(nd)]), 0.0)
    ones_k = aten.expand.default(aten.scalar_tensor.default(1.0, dtype=acc), [c, 1] + k)
    sums = aten.convolution.default(padded, ones_k, None, st, [0] * nd, [1] * nd, False, [0] * nd, c)
    if divisor_override:
        out = aten.div.Tensor(sums, divisor_override)
    else:
        real = aten.expand.default(aten.scalar_tensor.default(1.0, dtype=acc), [1, 1] + sizes)
        if count_include_pad:  # explicit padding counts, the ceil-mode overhang does not
            mask = aten.constant_pad_nd.default(aten.constant_pad_nd.default(real, pad_list(p, p), 1.0),
                                                pad_list([0] * nd, extra), 0.0)
        else:
            mask = aten.constant_pad_nd.default(real, pad_list(p, [p[i] + extra[i] for i in range(nd)]), 0.0)
        one_k = aten.expand.default(aten.scalar_tensor.default(1.0, dtype=acc), [1, 1] + k)
        counts = aten.convolution.default(mask, one_k, None, st, [0] * nd, [1] * nd, False, [0] * nd, 1)
        out = aten.div.Tensor(sums, counts)
    out = _cast(out, x.dtype)
    return aten.squeeze.dim(out, 0) if unbatched else out


def _windows(x, positions: list):
    """Gather pooling windows: ``positions[i]`` is an [O_i, K_i] int tensor of coordinates along the i-th of
    x's last len(positions) dims. Returns x's leading dims + [O_1, ..., O_n, K_1 * ... * K_n]."""
    nd = len(positions)
    lead = x.dim() - nd
    for i, pos in enumerate(positions):
        x = _select_along(x, lead + 2 * i, pos)  # dim lead+i became (O_i, K_i) pairs before it
    perm = list(range(lead)) + [lead + 2 * i for i in range(nd)] + [lead + 2 * i + 1 for i in range(nd)]
    x = aten.permute.default(x, perm)
    return aten.reshape.default(x, list(x.shape[:lead + nd]) + [-1])


def _flat_positions(positions: list, sizes: list[int]):
    """[O_1, ..., O_n, K] flat (row-major over ``sizes``) input offsets matching ``_windows``' layout."""
    nd = len(positions)
    total = None
    for i, pos in enumerate(positions):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = pos.shape[0], pos.shape[1]
        term = aten.mul.Tensor(aten.reshape.default(pos, shape), math.prod(sizes[i + 1:]))
        total = term if total is None else aten.add.Tensor(total, term)
    return aten.reshape.default(total, list(total.shape[:nd]) + [-1])


def _window_max(win, valid, flat):
    """Max over the last dim of gathered windows and PyTorch's argmax: the first maximum, or the last NaN
    (the CPU kernels update on ``val > max || isnan(val)``); ``valid`` masks padding, ``flat`` maps a window
    slot to the flat input offset returned as the index."""
    values = aten.amax.default(win, [-1])
    if valid is not None:
        values_hit = aten.logical_and.default(aten.eq.Tensor(win, aten.unsqueeze.default(values, -1)), valid)
    else:
        values_hit = aten.eq.Tensor(win, aten.unsqueeze.default(values, -1))
    first = aten.argmax.default(_cast(values_hit, torch.int32), -1, True)
    nan = aten.isnan.default(win)
    if valid is not None:
        nan = aten.logical_and.default(nan, valid)
    k = win.shape[-1]
    last_nan = aten.rsub.Scalar(aten.argmax.default(_cast(aten.flip.default(nan, [-1]), torch.int32), -1, True),
                                k - 1)
    slot = aten.where.self(aten.isnan.default(aten.unsqueeze.default(values, -1)), last_nan, first)
    flat = aten.expand.default(flat, list(win.shape))
    return values, aten.squeeze.dim(aten.gather.default(flat, -1, slot), -1)


def _max_pool3d(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """3-d max pooling with indices by gathering every window (static positions) and reducing; torch-mlir
    has no lowering for ``max_pool3d_with_indices``."""
    nd = 3
    k, p, d = int_list(kernel_size, nd), int_list(padding, nd), int_list(dilation, nd)
    st = int_list(stride, nd) if stride else k
    sizes = list(x.shape[-nd:])
    outs = [pool_out(sizes[i], k[i], st[i], p[i], d[i], ceil_mode) for i in range(nd)]
    lead = list(x.shape[:-nd])
    if x.numel() == 0:
        return zeros(lead + outs, x.dtype, x.device), zeros(lead + outs, torch.int64, x.device)
    # coordinates in the unpadded input; out-of-range ones (padding, ceil overhang) are clamped for the
    # gather and masked out of the maximum
    coords, valid = [], None
    for i in range(nd):
        o = aten.unsqueeze.default(arange(outs[i], x.device), 1)
        j = aten.unsqueeze.default(arange(k[i], x.device), 0)
        c = aten.sub.Tensor(aten.add.Tensor(aten.mul.Tensor(o, st[i]), aten.mul.Tensor(j, d[i])), p[i])
        coords.append(c)
        ok = aten.logical_and.default(aten.ge.Scalar(c, 0), aten.lt.Scalar(c, sizes[i]))
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = outs[i], k[i]
        ok = aten.reshape.default(ok, shape)
        valid = ok if valid is None else aten.logical_and.default(valid, ok)
    valid = aten.reshape.default(valid, outs + [-1])
    clamped = [aten.clamp.default(c, 0, sizes[i] - 1) for i, c in enumerate(coords)]
    win = _windows(x, clamped)
    neg_inf = aten.scalar_tensor.default(float("-inf"), dtype=x.dtype, device=x.device)
    win = aten.where.self(valid, win, neg_inf)
    return _window_max(win, valid, _flat_positions(clamped, sizes))


def _adaptive_max_pool3d(x, output_size):
    """Adaptive 3-d max pooling with indices: each window gathered at static positions (windows shorter than
    the longest repeat their last element, which changes neither the maximum nor its first index)."""
    nd = 3
    outs = int_list(output_size, nd)
    sizes = list(x.shape[-nd:])
    lead = list(x.shape[:-nd])
    if x.numel() == 0 or 0 in outs:
        return zeros(lead + outs, x.dtype, x.device), zeros(lead + outs, torch.int64, x.device)
    positions = []
    for i in range(nd):
        bounds = _adaptive_bounds(sizes[i], outs[i])
        kmax = max(e - s for s, e in bounds)
        o = aten.unsqueeze.default(arange(outs[i], x.device), 1)
        j = aten.unsqueeze.default(arange(kmax, x.device), 0)
        start = aten.div.Tensor_mode(aten.mul.Tensor(o, sizes[i]), outs[i], rounding_mode="floor")
        last = aten.sub.Tensor(aten.neg.default(aten.div.Tensor_mode(
            aten.mul.Tensor(aten.add.Tensor(o, 1), -sizes[i]), outs[i], rounding_mode="floor")), 1)
        positions.append(aten.minimum.default(aten.add.Tensor(start, j), last))
    win = _windows(x, positions)
    return _window_max(win, None, _flat_positions(positions, sizes))


def _fractional_max_pool(nd: int) -> Callable:
    """Fractional max pooling with indices. The window starts depend on the per-plane ``random_samples``
    (an input, so the op is deterministic): start[o] = trunc((o + u) * a) - trunc(u * a) with
    a = (L - k) / (O - 1), the last window ending at L, computed in the input dtype like the CPU kernel.
    The k-wide windows are then gathered from each flattened plane and reduced as in max pooling."""
    def decomp(x, kernel_size, output_size, random_samples):
        k, outs = int_list(kernel_size, nd), int_list(output_size, nd)
        batched = x.dim() == nd + 2
        if not batched:
            x = aten.unsqueeze.default(x, 0)
        n, c = x.shape[:2]
        sizes = list(x.shape[2:])
        if x.numel() == 0 or 0 in outs:
            vals, idx = zeros([n, c] + outs, x.dtype, x.device), zeros([n, c] + outs, torch.int64, x.device)
        else:
            # the sample for spatial dim i: the kernel reads width first in 2-d (w, h), depth first in 3-d
            order = [1, 0] if nd == 2 else [0, 1, 2]
            flat = None
            for i in range(nd):
                u = aten.unsqueeze.default(aten.select.int(_cast(random_samples, x.dtype), 2, order[i]), -1)
                o = _cast(arange(outs[i], x.device), x.dtype)
                if outs[i] > 1:
                    alpha = aten.div.Tensor(aten.scalar_tensor.default(sizes[i] - k[i], dtype=x.dtype, device=x.device),
                                            aten.scalar_tensor.default(outs[i] - 1, dtype=x.dtype, device=x.device))
                    start = aten.sub.Tensor(_cast(aten.mul.Tensor(aten.add.Tensor(o, u), alpha), torch.int64),
                                            _cast(aten.mul.Tensor(u, alpha), torch.int64))  # [n, c, O]
                    is_last = aten.eq.Scalar(arange(outs[i], x.device), outs[i] - 1)
                    start = aten.where.self(is_last, aten.scalar_tensor.default(sizes[i] - k[i], dtype=torch.int64),
                                            start)
                else:
                    start = aten.expand.default(aten.scalar_tensor.default(sizes[i] - k[i], dtype=torch.int64,
                                                                           device=x.device), [n, c, 1])
                pos = aten.add.Tensor(aten.unsqueeze.default(start, -1), arange(k[i], x.device))  # [n, c, O, K]
                # lay dims out as [n, c, O_1..O_nd, K_1..K_nd] for the flat offset
                shape = [n, c] + [1] * (2 * nd)
                shape[2 + i], shape[2 + nd + i] = outs[i], k[i]
                term = aten.mul.Tensor(aten.reshape.default(pos, shape), math.prod(sizes[i + 1:]))
                flat = term if flat is None else aten.add.Tensor(flat, term)
            flat = aten.reshape.default(flat, [n, c] + outs + [-1])
            plane = aten.reshape.default(x, [n, c, -1])
            win = aten.reshape.default(aten.gather.default(plane, 2, aten.reshape.default(flat, [n, c, -1])),
                                       list(flat.shape))
            vals, idx = _window_max(win, None, flat)
        if not batched:
            vals, idx = aten.squeeze.dim(vals, 0), aten.squeeze.dim(idx, 0)
        return vals, idx
    return decomp
