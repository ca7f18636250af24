"""Neuron decompositions: pooling, padding, convolution and other nn.functional ops torch-mlir has no StableHLO
lowering for (or lowers wrongly), rewritten into ATen ops it does lower: slicing, ``index_select``/``gather``
with index tensors computed from static sizes, matmul, reductions, regular convolution.

Shared conventions: every decomposition is traced with fake tensors, so positions and weights derive from
static sizes only (``arange`` arithmetic, no data-dependent control flow); reduced-precision inputs are
computed in float32 where the CPU kernel accumulates in float, and cast back once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .decompositions import _pool_out  # PyTorch's pooling output size (ceil mode included)

aten = torch.ops.aten


# ------------------------------------------------------------------------------------------------ helpers
def _tuple(v, n: int) -> list[int]:
    """An ``int[n]`` argument as a list of n ints (ATen accepts one value for all dims)."""
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def _zeros(shape, dtype, device=None):
    """A zero tensor built from a broadcast scalar (lowers for any shape, including zero-size ones)."""
    zero = aten.scalar_tensor.default(0, dtype=dtype, device=device)
    return aten.clone.default(aten.expand.default(zero, list(shape)))


def _arange(n: int, device=None):
    return aten.arange.start_step(0, n, 1, dtype=torch.int64, device=device)


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """Accumulation dtype: CPU kernels accumulate half/bfloat16 in float."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _cast(x, dtype):
    return x if x.dtype == dtype else aten._to_copy.default(x, dtype=dtype)


def _select_along(x, dim: int, idx):
    """``x`` indexed along ``dim`` by an integer tensor ``idx`` of any shape: the dim is replaced by idx's
    dims (``index_select`` on the flattened index, then a reshape)."""
    flat = aten.index_select.default(x, dim, aten.reshape.default(idx, [-1]))
    shape = list(x.shape)
    return aten.reshape.default(flat, shape[:dim] + list(idx.shape) + shape[dim + 1:])


# ------------------------------------------------------------------------------------------------ padding
def _pad_nd(mode: str) -> Callable:
    """Reflection / replication padding of the last len(padding)/2 dims as slices (+ flips) concatenated
    around the input, one dim at a time (torch-mlir's own lowering fails on zero-size inputs). Negative
    padding crops, as in eager."""
    def decomp(x, padding):
        pads = list(padding)
        for i in range(len(pads) // 2):
            dim = x.dim() - 1 - i
            x = _pad_dim(x, dim, pads[2 * i], pads[2 * i + 1], mode)
        return x
    return decomp


def _pad_dim(x, dim: int, left: int, right: int, mode: str):
    n = x.shape[dim]
    if x.numel() == 0:
        shape = list(x.shape)
        shape[dim] = n + left + right
        return _zeros(shape, x.dtype, x.device)
    middle = aten.slice.Tensor(x, dim, max(0, -left), n - max(0, -right))
    parts = []
    if left > 0:
        if mode == "reflect":  # x[left], ..., x[1]
            parts.append(aten.flip.default(aten.slice.Tensor(x, dim, 1, left + 1), [dim]))
        else:
            parts.append(aten.expand.default(aten.slice.Tensor(x, dim, 0, 1), _size_at(x, dim, left)))
    parts.append(middle)
    if right > 0:
        if mode == "reflect":  # x[n-2], ..., x[n-1-right]
            parts.append(aten.flip.default(aten.slice.Tensor(x, dim, n - 1 - right, n - 1), [dim]))
        else:
            parts.append(aten.expand.default(aten.slice.Tensor(x, dim, n - 1, n), _size_at(x, dim, right)))
    return aten.cat.default(parts, dim) if len(parts) > 1 else aten.clone.default(middle)


def _size_at(x, dim: int, n: int) -> list[int]:
    shape = list(x.shape)
    shape[dim] = n
    return shape


# ------------------------------------------------------------------------------------------------ pooling
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
    o = aten.unsqueeze.default(_arange(n_out, x.device), 1)
    j = aten.unsqueeze.default(_arange(n_in, x.device), 0)
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
        out_size = _tuple(output_size, nd)
        spatial = list(x.shape[-nd:])
        if native and all(n % o == 0 for n, o in zip(spatial, out_size)) and x.numel() > 0:
            return NotImplemented
        if x.numel() == 0 or 0 in out_size:
            return _zeros(list(x.shape[:-nd]) + out_size, x.dtype, x.device)
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
    k, p = _tuple(kernel_size, nd), _tuple(padding, nd)
    st = _tuple(stride, nd) if stride else k
    unbatched = x.dim() == nd + 1
    if unbatched:
        x = aten.unsqueeze.default(x, 0)
    n, c = x.shape[:2]
    sizes = list(x.shape[2:])
    outs = [_pool_out(sizes[i], k[i], st[i], p[i], 1, ceil_mode) for i in range(nd)]
    if x.numel() == 0:
        out = _zeros([n, c] + outs, x.dtype, x.device)
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
    k, p, d = _tuple(kernel_size, nd), _tuple(padding, nd), _tuple(dilation, nd)
    st = _tuple(stride, nd) if stride else k
    sizes = list(x.shape[-nd:])
    outs = [_pool_out(sizes[i], k[i], st[i], p[i], d[i], ceil_mode) for i in range(nd)]
    lead = list(x.shape[:-nd])
    if x.numel() == 0:
        return _zeros(lead + outs, x.dtype, x.device), _zeros(lead + outs, torch.int64, x.device)
    # coordinates in the unpadded input; out-of-range ones (padding, ceil overhang) are clamped for the
    # gather and masked out of the maximum
    coords, valid = [], None
    for i in range(nd):
        o = aten.unsqueeze.default(_arange(outs[i], x.device), 1)
        j = aten.unsqueeze.default(_arange(k[i], x.device), 0)
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
    outs = _tuple(output_size, nd)
    sizes = list(x.shape[-nd:])
    lead = list(x.shape[:-nd])
    if x.numel() == 0 or 0 in outs:
        return _zeros(lead + outs, x.dtype, x.device), _zeros(lead + outs, torch.int64, x.device)
    positions = []
    for i in range(nd):
        bounds = _adaptive_bounds(sizes[i], outs[i])
        kmax = max(e - s for s, e in bounds)
        o = aten.unsqueeze.default(_arange(outs[i], x.device), 1)
        j = aten.unsqueeze.default(_arange(kmax, x.device), 0)
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
        k, outs = _tuple(kernel_size, nd), _tuple(output_size, nd)
        batched = x.dim() == nd + 2
        if not batched:
            x = aten.unsqueeze.default(x, 0)
        n, c = x.shape[:2]
        sizes = list(x.shape[2:])
        if x.numel() == 0 or 0 in outs:
            vals, idx = _zeros([n, c] + outs, x.dtype, x.device), _zeros([n, c] + outs, torch.int64, x.device)
        else:
            # the sample for spatial dim i: the kernel reads width first in 2-d (w, h), depth first in 3-d
            order = [1, 0] if nd == 2 else [0, 1, 2]
            flat = None
            for i in range(nd):
                u = aten.unsqueeze.default(aten.select.int(_cast(random_samples, x.dtype), 2, order[i]), -1)
                o = _cast(_arange(outs[i], x.device), x.dtype)
                if outs[i] > 1:
                    alpha = aten.div.Tensor(aten.scalar_tensor.default(sizes[i] - k[i], dtype=x.dtype, device=x.device),
                                            aten.scalar_tensor.default(outs[i] - 1, dtype=x.dtype, device=x.device))
                    start = aten.sub.Tensor(_cast(aten.mul.Tensor(aten.add.Tensor(o, u), alpha), torch.int64),
                                            _cast(aten.mul.Tensor(u, alpha), torch.int64))  # [n, c, O]
                    is_last = aten.eq.Scalar(_arange(outs[i], x.device), outs[i] - 1)
                    start = aten.where.self(is_last, aten.scalar_tensor.default(sizes[i] - k[i], dtype=torch.int64),
                                            start)
                else:
                    start = aten.expand.default(aten.scalar_tensor.default(sizes[i] - k[i], dtype=torch.int64,
                                                                           device=x.device), [n, c, 1])
                pos = aten.add.Tensor(aten.unsqueeze.default(start, -1), _arange(k[i], x.device))  # [n, c, O, K]
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


# ------------------------------------------------------------------------------------------------ convolution
def _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """Transposed convolution with output_padding: torch-mlir mis-sizes it, but lowers transposed
    convolution without output_padding correctly. Output_padding only extends the output past the
    (right) cropping of ``padding``, so compute it with padding ``max(p - op, 0)``, crop the first
    ``p - that`` positions and zero-extend if op > p, then add the bias (the extension gets it too).
    Reduced precision is computed in float and rounded once, as CPU's oneDNN path does; when some
    output_padding >= stride, CPU takes its col2im path instead, whose rounding is reproduced too."""
    if not transposed or not any(output_padding):
        return NotImplemented
    nd = x.dim() - 2
    st, p, op = _tuple(stride, nd), _tuple(padding, nd), _tuple(output_padding, nd)
    acc = _acc_dtype(x.dtype)
    xa, wa = _cast(x, acc), _cast(weight, acc)
    if acc != x.dtype and any(o >= s for o, s in zip(op, st)):
        y = _transposed_col2im_rounding(xa, wa, st, p, dilation, op, groups, x.dtype)
    else:
        y = _transposed_output_padding(xa, wa, st, p, dilation, op, groups)
    if bias is not None:
        y = aten.add.Tensor(_cast(y, acc), aten.reshape.default(_cast(bias, acc), [-1] + [1] * nd))
    return _cast(y, x.dtype)


def _transposed_output_padding(x, weight, stride, p, dilation, op, groups):
    nd = x.dim() - 2
    inner_p = [max(pi - oi, 0) for pi, oi in zip(p, op)]
    y = aten.convolution.default(x, weight, None, stride, inner_p, dilation, True, [0] * nd, groups)
    for i in range(nd):
        dim = 2 + i
        crop = p[i] - inner_p[i]
        if crop:
            y = aten.slice.Tensor(y, dim, crop, y.shape[dim])
        extend = max(op[i] - p[i], 0)
        if extend:
            y = aten.cat.default([y, _zeros(_size_at(y, dim, extend), y.dtype, y.device)], dim)
    return y


def _transposed_col2im_rounding(x, weight, stride, p, dilation, op, groups, dtype):
    """CPU's slow transposed convolution in reduced precision: every kernel offset's contribution
    (a float-accumulated GEMM) is rounded to ``dtype`` and the contributions are summed in ``dtype`` in
    kernel-offset order (col2im). One masked-weight transposed convolution per offset reproduces that."""
    ks = list(weight.shape[2:])
    taps = math.prod(ks)
    flat_offsets = aten.reshape.default(_arange(taps, x.device), ks)
    total = None
    for t in range(taps):
        mask = _cast(aten.eq.Scalar(flat_offsets, t), weight.dtype)
        part = _cast(_transposed_output_padding(x, aten.mul.Tensor(weight, mask), stride, p, dilation, op, groups),
                     dtype)
        total = part if total is None else aten.add.Tensor(total, part)
    return total


# ------------------------------------------------------------------------------------------------ unfold
def _im2col(x, kernel_size, dilation, padding, stride):
    """``unfold`` (im2col): zero-pad, gather every block row/column at static positions, and lay the
    kernel offsets out as channels; PyTorch's own decomposition leaves an in-place copy after
    functionalization."""
    k, d, p, s = _tuple(kernel_size, 2), _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2)
    batched = x.dim() == 4
    if not batched:
        x = aten.unsqueeze.default(x, 0)
    n, c, h, w = x.shape
    outs = [(size + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i, size in enumerate((h, w))]
    if x.numel() == 0:
        out = _zeros([n, c * k[0] * k[1], outs[0] * outs[1]], x.dtype, x.device)
        return out if batched else aten.squeeze.dim(out, 0)
    xp = aten.constant_pad_nd.default(x, [p[1], p[1], p[0], p[0]], 0.0)
    pos = []
    for i in range(2):  # [K_i, O_i]: kernel offset major, as im2col's channel layout wants
        j = aten.unsqueeze.default(_arange(k[i], x.device), 1)
        o = aten.unsqueeze.default(_arange(outs[i], x.device), 0)
        pos.append(aten.add.Tensor(aten.mul.Tensor(j, d[i]), aten.mul.Tensor(o, s[i])))
    y = _select_along(xp, 2, pos[0])          # n, c, kh, oh, W
    y = _select_along(y, 4, pos[1])           # n, c, kh, oh, kw, ow
    y = aten.permute.default(y, [0, 1, 2, 4, 3, 5])
    out = aten.reshape.default(y, [n, c * k[0] * k[1], outs[0] * outs[1]])
    return out if batched else aten.squeeze.dim(out, 0)


def _unfold_copy(x, dimension, size, step):
    """``Tensor.unfold`` as a copy: gather the windows along ``dimension`` ([n_windows, size] positions)
    and move the window dim last; torch-mlir crashes on the view form."""
    if x.dim() == 0:
        return aten.reshape.default(aten.clone.default(x), [size])
    dim = dimension % x.dim()
    count = (x.shape[dim] - size) // step + 1
    if x.numel() == 0 or count * size == 0:
        shape = _size_at(x, dim, count) + [size]
        return _zeros(shape, x.dtype, x.device)
    o = aten.unsqueeze.default(_arange(count, x.device), 1)
    j = aten.unsqueeze.default(_arange(size, x.device), 0)
    y = _select_along(x, dim, aten.add.Tensor(aten.mul.Tensor(o, step), j))
    return aten.movedim.int(y, dim + 1, -1)


# ------------------------------------------------------------------------------------------------ distances
def _pdist(x, p=2.0):
    """Condensed pairwise distances (rows i < j, row-major): the pair list is static, so the rows of every
    pair are gathered with index tensors computed from N and reduced as in ``torch.cdist``."""
    n, m = x.shape
    pairs = n * (n - 1) // 2
    if pairs == 0 or m == 0:
        return _zeros([pairs], x.dtype, x.device)
    # pair t belongs to the row i with f(i) <= t < f(i+1), f(i) = i*n - i*(i+1)/2 pairs before row i;
    # counting the rows whose first pair is <= t finds i without any data-dependent step
    t = aten.unsqueeze.default(_arange(pairs, x.device), 1)
    rows = aten.unsqueeze.default(aten.arange.start_step(1, n, 1, dtype=torch.int64, device=x.device), 0)
    firsts = aten.sub.Tensor(aten.mul.Tensor(rows, n), aten.div.Tensor_mode(
        aten.mul.Tensor(rows, aten.add.Tensor(rows, 1)), 2, rounding_mode="floor"))
    i = aten.sum.dim_IntList(_cast(aten.le.Tensor(firsts, t), torch.int64), [1])
    first_of_i = aten.sub.Tensor(aten.mul.Tensor(i, n), aten.div.Tensor_mode(
        aten.mul.Tensor(i, aten.add.Tensor(i, 1)), 2, rounding_mode="floor"))
    j = aten.add.Tensor(aten.sub.Tensor(aten.squeeze.dim(t, 1), first_of_i), aten.add.Tensor(i, 1))
    diff = aten.sub.Tensor(aten.index_select.default(x, 0, i), aten.index_select.default(x, 0, j))
    a = aten.abs.default(diff)
    if p == 0:
        return aten.sum.dim_IntList(_cast(aten.ne.Scalar(a, 0), x.dtype), [-1])
    if p == float("inf"):
        return aten.amax.default(a, [-1])
    if p == 1:
        return aten.sum.dim_IntList(a, [-1])
    if p == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(diff, diff), [-1]))
    return aten.pow.Tensor_Scalar(aten.sum.dim_IntList(aten.pow.Tensor_Scalar(a, p), [-1]), 1.0 / p)


# ------------------------------------------------------------------------------------------------ bilinear
def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """``_trilinear`` (behind ``F.bilinear``) as one einsum: each input is unsqueezed at its ``expand``
    dims, the three are multiplied and ``sumdim`` summed out; einsum contracts pairwise through bmm."""
    nd = i1.dim() + len(expand1)
    letters = "abcdefghijklmnopqrstuvwxyz"[:nd]
    specs, size = [], [1] * nd
    for t, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        dims = [d for d in range(nd) if d not in expand]
        specs.append("".join(letters[d] for d in dims))
        for axis, d in enumerate(dims):
            if size[d] == 1:  # broadcasting: a size-1 dim takes the other operands' size (which may be 0)
                size[d] = t.shape[axis]
    present = set("".join(specs))
    kept = [d for d in range(nd) if d not in sumdim]
    out_shape = [size[d] for d in kept]
    if math.prod(out_shape) == 0 or any(t.numel() == 0 for t in (i1, i2, i3)):
        # zero-size operands: a sum over an empty range is 0 (torch-mlir mis-types zero-size contractions)
        return _zeros(out_shape, i1.dtype, i1.device)
    out = aten.einsum.default(
        f"{specs[0]},{specs[1]},{specs[2]}->" + "".join(letters[d] for d in kept if letters[d] in present),
        [i1, i2, i3])
    # a kept dim every input expands has size 1
    return aten.reshape.default(out, out_shape)


# ------------------------------------------------------------------------------------------------ resampling
def _aa_weights(n_in: int, n_out: int, align_corners: bool, scale_arg, device):
    """[n_out, n_in] antialiased bilinear (triangle filter) weights, as PyTorch's separable CPU kernel
    computes them: the filter is stretched by the scale when downsampling, and each row is normalised.
    Every input position outside a row's window has zero filter weight, so no window bounds are needed."""
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_arg if scale_arg is not None and scale_arg > 0 else n_in / n_out
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    i = _cast(aten.unsqueeze.default(_arange(n_out, device), 1), torch.float32)
    j = _cast(aten.unsqueeze.default(_arange(n_in, device), 0), torch.float32)
    center = aten.mul.Tensor(aten.add.Tensor(i, 0.5), scale)
    x = aten.mul.Tensor(aten.add.Tensor(aten.sub.Tensor(j, center), 0.5), invscale)
    w = aten.clamp_min.default(aten.rsub.Scalar(aten.abs.default(x), 1.0), 0.0)
    return aten.div.Tensor(w, aten.sum.dim_IntList(w, [1], True))


def _upsample_bilinear2d_aa(x, output_size, align_corners, scales_h=None, scales_w=None):
    """Antialiased bilinear resize as two matmuls with static weight matrices (height, then width)."""
    oh, ow = output_size
    h, w = x.shape[-2:]
    if x.numel() == 0 or oh * ow == 0:
        return _zeros(list(x.shape[:-2]) + [oh, ow], x.dtype, x.device)
    wh = _aa_weights(h, oh, align_corners, scales_h, x.device)
    ww = _aa_weights(w, ow, align_corners, scales_w, x.device)
    acc = _acc_dtype(x.dtype)
    y = aten.matmul.default(_cast(x, acc), aten.t.default(_cast(ww, acc)))   # [..., h, ow]
    y = aten.matmul.default(_cast(wh, acc), y)                              # [..., oh, ow]
    return _cast(y, x.dtype)


def _grid_unnormalize(coord, size: int, align_corners: bool):
    """A [-1, 1] grid coordinate as a pixel coordinate (the CPU kernel's operation order)."""
    if align_corners:
        return aten.mul.Tensor(aten.div.Tensor(aten.add.Tensor(coord, 1), 2), size - 1)
    return aten.div.Tensor(aten.sub.Tensor(aten.mul.Tensor(aten.add.Tensor(coord, 1), size), 1), 2)


def _grid_pad_coordinate(x, size: int, padding_mode: int, align_corners: bool):
    """Border clipping (padding mode 1) or reflection then clipping (mode 2) of a pixel coordinate."""
    if padding_mode == 2:
        lo2, hi2 = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if lo2 == hi2:
            x = aten.zeros_like.default(x)
        else:
            low, span = lo2 / 2, (hi2 - lo2) / 2
            d = aten.abs.default(aten.sub.Tensor(x, low))
            flips = aten.floor.default(aten.div.Tensor(d, span))
            extra = aten.sub.Tensor(d, aten.mul.Tensor(flips, span))  # fmod(d, span), d >= 0
            even = aten.eq.Tensor(flips, aten.mul.Tensor(aten.floor.default(aten.div.Tensor(flips, 2)), 2))
            x = aten.where.self(even, aten.add.Tensor(extra, low), aten.add.Tensor(aten.rsub.Scalar(extra, span), low))
    if padding_mode in (1, 2):
        x = aten.clamp.default(x, 0, size - 1)
    return x


def _cubic_coefficients(t):
    """The four cubic-convolution (A = -0.75) tap weights for fractional offset t, as upsample_bicubic."""
    a = -0.75

    def near(x):  # |x| <= 1
        return aten.add.Tensor(aten.mul.Tensor(aten.mul.Tensor(
            aten.sub.Tensor(aten.mul.Tensor(x, a + 2), a + 3), x), x), 1)

    def far(x):  # 1 < |x| < 2
        return aten.sub.Tensor(aten.mul.Tensor(aten.add.Tensor(aten.mul.Tensor(
            aten.sub.Tensor(aten.mul.Tensor(x, a), 5 * a), x), 8 * a), x), 4 * a)

    u = aten.rsub.Scalar(t, 1)
    return [far(aten.add.Tensor(t, 1)), near(t), near(u), far(aten.add.Tensor(u, 1))]


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """2-d/3-d grid sampling (bilinear/trilinear or nearest) by gathering the needed pixels from the
    flattened image: source coordinates are elementwise math on the grid, corner pixels a ``gather`` with
    out-of-image corners masked to zero (which is also the zeros padding mode). Computed in the input dtype
    with the CPU kernel's operation order, so reduced precision rounds as it does. Bicubic (2-d only) is
    left to PyTorch's decomposition."""
    sizes = list(input.shape[2:])
    nd = len(sizes)
    if interpolation_mode not in (0, 1) and not (interpolation_mode == 2 and nd == 2):
        return NotImplemented
    n, c = input.shape[:2]
    out_sp = list(grid.shape[1:-1])
    if input.numel() == 0 or grid.numel() == 0:
        return _zeros([n, c] + out_sp, input.dtype, input.device)
    acc = input.dtype
    g = aten.reshape.default(_cast(grid, acc), [n, -1, nd])  # [n, P, (x, y[, z])]
    axis_size = sizes[::-1]  # grid axis a (x, y, z) indexes spatial dim nd-1-a
    coords = [_grid_unnormalize(aten.select.int(g, 2, a), axis_size[a], align_corners) for a in range(nd)]
    if interpolation_mode != 2:  # bicubic pads each tap instead
        coords = [_grid_pad_coordinate(x, axis_size[a], padding_mode, align_corners) for a, x in enumerate(coords)]
    flat = aten.reshape.default(input, [n, c, math.prod(sizes)])

    def pixels(idx):
        """Values at integer coordinates (one [n, P] tensor per grid axis) as [n, c, P]; out-of-image ones
        are 0."""
        inside, lin = None, None
        for a in reversed(range(nd)):  # row-major: the slowest spatial dim is the last grid axis
            ok = aten.logical_and.default(aten.ge.Scalar(idx[a], 0), aten.lt.Scalar(idx[a], axis_size[a]))
            inside = ok if inside is None else aten.logical_and.default(inside, ok)
            i = aten.clamp.default(idx[a], 0, axis_size[a] - 1)
            lin = i if lin is None else aten.add.Tensor(aten.mul.Tensor(lin, axis_size[a]), i)
        vals = aten.gather.default(flat, 2, aten.expand.default(aten.unsqueeze.default(lin, 1), [n, c, lin.shape[1]]))
        return aten.mul.Tensor(vals, aten.unsqueeze.default(_cast(inside, acc), 1))

    if interpolation_mode == 1:  # nearest: round half to even, like nearbyint
        out = pixels([_cast(aten.round.default(x), torch.int64) for x in coords])
    elif interpolation_mode == 2:  # bicubic: 4x4 taps, each tap coordinate padded, rows then columns
        lows = [aten.floor.default(x) for x in coords]
        cx, cy = (_cubic_coefficients(aten.sub.Tensor(x, lo)) for x, lo in zip(coords, lows))

        def tap(a, lo, k):
            return _cast(_grid_pad_coordinate(aten.add.Tensor(lo, k - 1), axis_size[a], padding_mode, align_corners),
                         torch.int64)

        out = None
        for i in range(4):
            row = None
            for j in range(4):
                term = aten.mul.Tensor(pixels([tap(0, lows[0], j), tap(1, lows[1], i)]),
                                       aten.unsqueeze.default(cx[j], 1))
                row = term if row is None else aten.add.Tensor(row, term)
            term = aten.mul.Tensor(row, aten.unsqueeze.default(cy[i], 1))
            out = term if out is None else aten.add.Tensor(out, term)
    else:
        lows = [aten.floor.default(x) for x in coords]
        # weight of the low corner along an axis is (low + 1 - x), of the high one (x - low)
        w_lo = [aten.sub.Tensor(aten.add.Tensor(lo, 1), x) for x, lo in zip(coords, lows)]
        w_hi = [aten.sub.Tensor(x, lo) for x, lo in zip(coords, lows)]
        lows = [_cast(lo, torch.int64) for lo in lows]
        out = None
        for corner in range(2 ** nd):  # x fastest, then y, then z: the kernel's nw, ne, sw, se ... order
            bits = [(corner >> a) & 1 for a in range(nd)]
            w = None
            for a, b in enumerate(bits):
                wf = w_hi[a] if b else w_lo[a]
                w = wf if w is None else aten.mul.Tensor(w, wf)
            term = aten.mul.Tensor(pixels([aten.add.Tensor(lo, b) for lo, b in zip(lows, bits)]),
                                   aten.unsqueeze.default(w, 1))
            out = term if out is None else aten.add.Tensor(out, term)
    return aten.reshape.default(out, [n, c] + out_sp)


# ------------------------------------------------------------------------------------------------ embedding_bag
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
        pos = aten.unsqueeze.default(_arange(n, dev), 1)
        starts = aten.unsqueeze.default(_cast(aten.slice.Tensor(offsets, 0, 0, bags), torch.int64), 0)
        bag_of = aten.sub.Tensor(aten.sum.dim_IntList(_cast(aten.le.Tensor(starts, pos), torch.int64), [1]), 1)
        member = aten.eq.Tensor(aten.unsqueeze.default(bag_of, 0), aten.unsqueeze.default(_arange(bags, dev), 1))
        if padding_idx is not None and padding_idx >= 0:
            member = aten.logical_and.default(member, aten.unsqueeze.default(aten.ne.Scalar(indices, padding_idx), 0))
        count = aten.sum.dim_IntList(_cast(member, torch.int64), [1])  # [bags]
        summed = member
        if include_last_offset and mode != 2 and not (padding_idx is not None and padding_idx >= 0):
            # the CPU fast path (sum/mean, no padding index) ends the last bag at the final offset, while
            # its bag sizes (the mean's divisor) run to the end of ``indices``
            end = _cast(aten.slice.Tensor(offsets, 0, bags, bags + 1), torch.int64)
            before_end = aten.lt.Tensor(aten.unsqueeze.default(_arange(n, dev), 0), aten.unsqueeze.default(end, 0))
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
            bag_size = _zeros([aux], idt, dev)
            max_indices = _zeros([aux], idt, dev)
            offset2bag = _cast(bag_of, idt) if padding_idx is not None and padding_idx >= 0 \
                else _zeros([0], idt, dev)
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
    touched = aten.any.dim(aten.eq.Tensor(aten.unsqueeze.default(_arange(rows, weight.device), 1), flat), 1)
    acc = _acc_dtype(weight.dtype)
    norm = aten.linalg_vector_norm.default(_cast(weight, acc), norm_type, [1], True)
    scale = aten.div.Tensor(aten.scalar_tensor.default(max_norm, dtype=acc, device=weight.device),
                            aten.add.Tensor(norm, 1e-7))
    rescale = aten.logical_and.default(aten.unsqueeze.default(touched, 1), aten.gt.Scalar(norm, max_norm))
    return aten.where.self(rescale, aten.mul.Tensor(weight, _cast(scale, weight.dtype)), weight)


# ---------------------------------------------------------------------------------------------- linear + cross entropy
def _linear_ce_rows(input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype):
    """Logits, per-row class weights (0 where the target is ignored) and per-row losses of the fused
    linear + cross-entropy, in the accumulation dtype."""
    acc = acc_dtype if acc_dtype is not None and acc_dtype.itemsize > _acc_dtype(input.dtype).itemsize \
        else _acc_dtype(input.dtype)
    logits = aten.mm.default(_cast(input, acc), aten.t.default(_cast(linear_weight, acc)))
    if linear_bias is not None:
        logits = aten.add.Tensor(logits, _cast(linear_bias, acc))
    ignored = aten.eq.Scalar(target, ignore_index)
    safe = aten.where.self(ignored, aten.zeros_like.default(target), target)  # ignore_index may be out of range
    keep = _cast(aten.logical_not.default(ignored), acc)
    row_w = keep if weight is None else aten.mul.Tensor(keep, aten.index_select.default(_cast(weight, acc), 0, safe))
    lse = aten.logsumexp.default(logits, [1])
    picked = aten.squeeze.dim(aten.gather.default(logits, 1, aten.unsqueeze.default(safe, 1)), 1)
    loss = aten.mul.Tensor(row_w, aten.sub.Tensor(lse, picked))
    return logits, safe, row_w, lse, loss


def _linear_cross_entropy_chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                                  label_smoothing, batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph,
                                  compute_input_grad, compute_linear_weight_grad, compute_linear_bias_grad):
    """torch.nn's batch-chunked fused linear + cross-entropy (mean/sum): the chunking is a memory schedule,
    so one unchunked linear + log-softmax gives the same loss; the gradients it precomputes in forward are
    the closed form (softmax - onehot) scaled per row, pushed through the linear layer."""
    if label_smoothing > 0.0:
        return NotImplemented  # the op itself rejects it
    logits, safe, row_w, lse, loss = _linear_ce_rows(input, linear_weight, target, linear_bias, weight,
                                                     ignore_index, acc_dtype)
    total = aten.sum.default(loss)
    scale = row_w
    if reduction == "mean":
        denom = aten.sum.default(row_w)
        total = aten.div.Tensor(total, denom)  # 0/0 = NaN, as the op's "d == 0 -> nan"
        scale = aten.div.Tensor(row_w, denom)
    dt = input.dtype
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        prob = aten.exp.default(aten.sub.Tensor(logits, aten.unsqueeze.default(lse, 1)))
        onehot = _cast(aten.eq.Tensor(aten.unsqueeze.default(_arange(logits.shape[1], logits.device), 0),
                                      aten.unsqueeze.default(safe, 1)), logits.dtype)
        g = aten.mul.Tensor(aten.sub.Tensor(prob, onehot), aten.unsqueeze.default(scale, 1))  # dloss/dlogits
    grad_input = _cast(aten.mm.default(g, _cast(linear_weight, g.dtype)), dt) if compute_input_grad \
        else _zeros([0, 0], dt, input.device)
    grad_lw = _cast(aten.mm.default(aten.t.default(g), _cast(input, g.dtype)), dt) if compute_linear_weight_grad \
        else _zeros([0, 0], dt, input.device)
    grad_lb = _cast(aten.sum.dim_IntList(g, [0]), dt) if compute_linear_bias_grad \
        else _zeros([0], dt, input.device)
    return _cast(total, dt), grad_input, grad_lw, grad_lb


def _linear_cross_entropy_chunked_none(input, linear_weight, target, linear_bias, weight, ignore_index,
                                       batch_chunk_size, acc_policy, acc_dtype):
    """reduction='none' form: the per-row losses (0 for ignored targets)."""
    loss = _linear_ce_rows(input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype)[-1]
    return _cast(loss, input.dtype)


def _linear_cross_entropy_ops() -> dict:
    try:
        import torch.nn.modules.linear_cross_entropy  # noqa: F401  (registers the torch_nn custom ops)
        ops = torch.ops.torch_nn
        return {ops._linear_cross_entropy_batch_chunked.default: _linear_cross_entropy_chunked,
                ops._linear_cross_entropy_batch_chunked_no_reduction.default: _linear_cross_entropy_chunked_none}
    except (ImportError, AttributeError):  # a PyTorch without the fused op
        return {}


# ------------------------------------------------------------------------------------------------ table
def table() -> dict[torch._ops.OperatorBase, Callable]:
    t: dict = {
        aten.reflection_pad1d.default: _pad_nd("reflect"),
        aten.reflection_pad2d.default: _pad_nd("reflect"),
        aten.reflection_pad3d.default: _pad_nd("reflect"),
        aten.replication_pad1d.default: _pad_nd("replicate"),
        aten.replication_pad2d.default: _pad_nd("replicate"),
        aten.replication_pad3d.default: _pad_nd("replicate"),
        aten._adaptive_avg_pool2d.default: _adaptive_avg_pool(2, native=True),
        aten._adaptive_avg_pool3d.default: _adaptive_avg_pool(3, native=False),
        aten.avg_pool3d.default: _avg_pool3d,
        aten.max_pool3d_with_indices.default: _max_pool3d,
        aten.adaptive_max_pool3d.default: _adaptive_max_pool3d,
        aten.convolution.default: _convolution,
        aten.im2col.default: _im2col,
        aten.unfold_copy.default: _unfold_copy,
        aten._pdist_forward.default: _pdist,
        aten._trilinear.default: _trilinear,
        aten.fractional_max_pool2d.default: _fractional_max_pool(2),
        aten.fractional_max_pool3d.default: _fractional_max_pool(3),
        aten.embedding_renorm.default: _embedding_renorm,
        aten.grid_sampler_2d.default: _grid_sampler,
        aten.grid_sampler_3d.default: _grid_sampler,
        aten._upsample_bilinear2d_aa.default: _upsample_bilinear2d_aa,
        aten._embedding_bag.default: _embedding_bag(forward_only=False),
        aten._embedding_bag_forward_only.default: _embedding_bag(forward_only=True),
    }
    t.update(_linear_cross_entropy_ops())
    return t
