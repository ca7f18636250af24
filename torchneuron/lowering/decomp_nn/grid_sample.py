"""2-d/3-d grid sampling (``F.grid_sample``)."""

from __future__ import annotations

import math

import torch

from ..decomp_common import zeros
from ._common import _cast

aten = torch.ops.aten


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
        return zeros([n, c] + out_sp, input.dtype, input.device)
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
