"""2-d max pooling in ceil mode and its backward, and 2-d average pooling (window shapes torch-mlir mis-sizes)."""

from __future__ import annotations

import torch

from ..decomp_common import int_list, pool_out, zeros

aten = torch.ops.aten


def _max_pool2d_ceil(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """``ceil_mode=True`` max pooling (torch-mlir sizes the window reduction with floor): pad the bottom/right
    edge with -inf up to the ceil size, pool with floor, and map the indices back to the unpadded input."""
    if not ceil_mode and stride:
        return NotImplemented  # torch-mlir lowers the plain case; an empty stride (= kernel) it reads as 1

    k, p, d = int_list(kernel_size, 2), int_list(padding, 2), int_list(dilation, 2)
    st = int_list(stride, 2) if stride else k
    H, W = x.shape[-2], x.shape[-1]
    oh, ow = (pool_out(n, k[i], st[i], p[i], d[i], True) for i, n in enumerate((H, W)))
    eh = max(0, (oh - 1) * st[0] + d[0] * (k[0] - 1) + 1 - (H + 2 * p[0]))
    ew = max(0, (ow - 1) * st[1] + d[1] * (k[1] - 1) + 1 - (W + 2 * p[1]))
    if eh == 0 and ew == 0:
        return aten.max_pool2d_with_indices.default(x, k, st, p, d, False)  # explicit stride: lowered directly
    xp = aten.constant_pad_nd.default(x, [0, ew, 0, eh], float("-inf"))
    values, idx = aten.max_pool2d_with_indices.default(xp, k, st, p, d, False)
    wp = aten.scalar_tensor.default(W + ew, dtype=idx.dtype)
    col = aten.remainder.Tensor(idx, wp)
    row = aten.div.Tensor_mode(aten.sub.Tensor(idx, col), wp, rounding_mode="trunc")
    return values, aten.add.Tensor(aten.mul.Tensor(row, W), col)


def _max_pool2d_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    """Max-pool gradient as a scatter-add of ``grad_output`` at the saved argmax ``indices`` (flat positions
    in each input plane)."""
    lead = list(self.shape[:-2])
    plane = self.shape[-2] * self.shape[-1]
    g = aten.reshape.default(grad_output, lead + [-1])
    i = aten.reshape.default(indices, lead + [-1])
    zero = zeros(lead + [plane], grad_output.dtype)
    return aten.reshape.default(aten.scatter_add.default(zero, -1, i, g), list(self.shape))


def _avg_pool2d(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    """Average pooling as a depthwise convolution with a ones kernel (window sums) divided by the window
    counts PyTorch uses, which covers ceil mode, ``count_include_pad=False`` and ``divisor_override``
    (torch-mlir lowers only part of that space)."""
    k, p = int_list(kernel_size, 2), int_list(padding, 2)
    st = int_list(stride, 2) if stride else k
    unbatched = x.dim() == 3
    if unbatched:
        x = aten.unsqueeze.default(x, 0)
    n, c, h, w = x.shape
    oh, ow = (pool_out(size, k[i], st[i], p[i], 1, ceil_mode) for i, size in enumerate((h, w)))
    eh = max(0, (oh - 1) * st[0] + k[0] - (h + 2 * p[0]))
    ew = max(0, (ow - 1) * st[1] + k[1] - (w + 2 * p[1]))
    padded = aten.constant_pad_nd.default(x, [p[1], p[1] + ew, p[0], p[0] + eh], 0.0)
    ones_k = aten.expand.default(aten.scalar_tensor.default(1.0, dtype=x.dtype), [c, 1, k[0], k[1]])
    sums = aten.convolution.default(padded, ones_k, None, st, [0, 0], [1, 1], False, [0, 0], c)
    if divisor_override:
        out = aten.div.Tensor(sums, divisor_override)
    else:
        # which positions count: real elements, plus the explicit padding when count_include_pad
        real = aten.expand.default(aten.scalar_tensor.default(1.0, dtype=x.dtype), [1, 1, h, w])
        if count_include_pad:
            real = aten.constant_pad_nd.default(real, [p[1], p[1], p[0], p[0]], 1.0)
            mask = aten.constant_pad_nd.default(real, [0, ew, 0, eh], 0.0)
        else:
            mask = aten.constant_pad_nd.default(real, [p[1], p[1] + ew, p[0], p[0] + eh], 0.0)
        one_k = aten.expand.default(aten.scalar_tensor.default(1.0, dtype=x.dtype), [1, 1, k[0], k[1]])
        counts = aten.convolution.default(mask, one_k, None, st, [0, 0], [1, 1], False, [0, 0], 1)
        out = aten.div.Tensor(sums, counts)
    return aten.squeeze.dim(out, 0) if unbatched else out
