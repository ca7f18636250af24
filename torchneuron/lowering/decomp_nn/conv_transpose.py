"""Transposed convolution with output_padding."""

from __future__ import annotations

import math

import torch

from ..decomp_common import arange, int_list, zeros
from ._common import _acc_dtype, _cast, _size_at

aten = torch.ops.aten


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
    st, p, op = int_list(stride, nd), int_list(padding, nd), int_list(output_padding, nd)
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
            y = aten.cat.default([y, zeros(_size_at(y, dim, extend), y.dtype, y.device)], dim)
    return y


def _transposed_col2im_rounding(x, weight, stride, p, dilation, op, groups, dtype):
    """CPU's slow transposed convolution in reduced precision: every kernel offset's contribution
    (a float-accumulated GEMM) is rounded to ``dtype`` and the contributions are summed in ``dtype`` in
    kernel-offset order (col2im). One masked-weight transposed convolution per offset reproduces that."""
    ks = list(weight.shape[2:])
    taps = math.prod(ks)
    flat_offsets = aten.reshape.default(arange(taps, x.device), ks)
    total = None
    for t in range(taps):
        mask = _cast(aten.eq.Scalar(flat_offsets, t), weight.dtype)
        part = _cast(_transposed_output_padding(x, aten.mul.Tensor(weight, mask), stride, p, dilation, op, groups),
                     dtype)
        total = part if total is None else aten.add.Tensor(total, part)
    return total
