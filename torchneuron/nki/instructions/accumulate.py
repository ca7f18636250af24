"""Vector-engine instructions that also reduce along the free dim: `tensor_scalar_reduce` (an element-wise
op plus its row reduction), `tensor_scalar_cumulative` (a running reduction) and `tensor_tensor_scan` (a
sequential scan over two tensors)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost
from ..core import alu, context
from ..core.tensor import NkiTensor
from ..errors import ERR_INVALID_ARG, fail
from .common import charge, output_mask, read, write
from .elementwise import tensor_scalar

_ACCUMULATORS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}


def tensor_scalar_reduce(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: NkiTensor | None = None, reverse0: bool = False, reduce_init: Any = None,
                         reduce_res_negate: bool = False, mask: np.ndarray | None = None,
                         api: str = "tensor_scalar_reduce") -> None:
    """dst = data op0 operand0, and reduce_res (P, 1) = the free-dim reduction of that result (elements
    masked off take no part)."""
    tensor_scalar(dst, data, op0, operand0, reverse0, mask=mask, api=api)
    if reduce_res is None:
        return
    name = alu.op_name(reduce_op, "reduce_op")
    vals = read(dst)
    if mask is not None:
        vals = np.where(np.broadcast_to(mask, vals.shape), vals, alu.REDUCE.get(name, (None, 0.0))[1])
    red = alu.reduce(name, vals.reshape(dst.partitions, -1), (1,), True)
    if reduce_init is not None:
        init = read(reduce_init).reshape(-1, 1) if isinstance(reduce_init, NkiTensor) else np.float32(reduce_init)
        red = alu.binary(name, red, init)
    write(reduce_res, (-red if reduce_res_negate else red).reshape(reduce_res.shape), None, api)
    context.current().issue("vector", cost.MIN_II, (dst,), (reduce_res,))


def tensor_scalar_cumulative(dst: NkiTensor, src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             mask: np.ndarray | None = None, api: str = "tensor_scalar_cumulative") -> None:
    """res[:, i] = op1(res[:, i-1], src[:, i] op0 imm0): a running reduction along the free dim; `imm1`
    (a scalar or (P, 1) tile) seeds it."""
    x = alu.binary(alu.op_name(op0), read(src), read(imm0) if isinstance(imm0, NkiTensor) else np.float32(imm0))
    x = x.reshape(src.partitions, -1)
    name1 = alu.op_name(op1)
    ufunc = _ACCUMULATORS.get(name1)
    if ufunc is None:
        raise fail(ERR_INVALID_ARG, f"'{api}' cannot accumulate with {name1}.",
                   "use add, multiply, maximum or minimum as op1.")
    if mask is not None:  # masked-off elements do not take part in the running reduction
        keep = np.broadcast_to(mask, src.shape).reshape(x.shape)
        x = np.where(keep, x, np.float32(alu.REDUCE[name1][1]))
    if imm1 is not None:
        seed = read(imm1).reshape(-1, 1) if isinstance(imm1, NkiTensor) else np.float32(imm1)
        x = x.copy()
        x[:, :1] = ufunc(x[:, :1], seed)
    out = ufunc.accumulate(x, axis=1)
    write(dst, out.reshape(dst.shape), mask, api)
    context.current().issue("vector", max(cost.MIN_II, 2 * dst.free_size), (src, imm0, imm1), (dst,))


def tensor_tensor_scan(dst: NkiTensor, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, api: str = "tensor_tensor_scan",
                       mask: np.ndarray | None = None) -> None:
    """res[:, i] = op1(op0(data0[:, i], res[:, i-1]), data1[:, i]); a sequential scan along the free dim."""
    a = read(data0).reshape(dst.partitions, -1)
    b = read(data1).reshape(dst.partitions, -1)
    prev = (read(initial).reshape(-1) if isinstance(initial, NkiTensor) else np.full(a.shape[0], initial, np.float32))
    n0, n1 = alu.op_name(op0), alu.op_name(op1)
    out = np.empty_like(a)
    for i in range(a.shape[1]):  # inherently sequential; each step is vectorised over partitions
        t = alu.binary(n0, prev, a[:, i]) if reverse0 else alu.binary(n0, a[:, i], prev)
        prev = alu.binary(n1, b[:, i], t) if reverse1 else alu.binary(n1, t, b[:, i])
        out[:, i] = prev
    write(dst, out.reshape(dst.shape), output_mask(api, mask, dst.shape), api)
    charge("vector", dst, [data0, data1, initial], max(cost.MIN_II, 2 * dst.free_size))
