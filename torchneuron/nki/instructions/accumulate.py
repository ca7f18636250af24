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
from .common import charge, output_mask, read, reduce_rows, write
from .elementwise import tensor_scalar

_ACCUMULATORS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}


def tensor_scalar_reduce(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: NkiTensor | None = None, reverse0: bool = False, reduce_init: Any = None,
                         reduce_res_negate: bool = False, mask: np.ndarray | None = None,
                         api: str = "tensor_scalar_reduce", reduce_cmd: Any = "reset_reduce") -> None:
    """dst = data op0 operand0, plus the free-dim reduction of that result (`vector_reduce`)."""
    tensor_scalar(dst, data, op0, operand0, reverse0, mask=mask, api=api)
    vector_reduce(api, dst, reduce_op, reduce_res, reduce_cmd, reduce_init, reduce_res_negate, mask)


def vector_reduce(api: str, dst: NkiTensor, reduce_op: Any, reduce_res: NkiTensor | None, reduce_cmd: Any,
                  reduce_init: Any = None, negate: bool = False, mask: np.ndarray | None = None) -> None:
    """The free-dim reduction of what a Vector instruction just wrote to `dst` (masked-off elements take no
    part), folded into the engine's accumulators (`fold_registers`), then written to `reduce_res` (P, 1)."""
    cmd = str(getattr(reduce_cmd, "name", reduce_cmd) or "reset_reduce")
    if reduce_res is None and cmd == "idle" or reduce_op is None or reduce_op is Ellipsis:
        return
    name = alu.op_name(reduce_op, "reduce_op")
    identity = alu.REDUCE.get(name, (None, 0.0))[1]
    vals = read(dst)
    if mask is not None:
        vals = np.where(np.broadcast_to(mask, vals.shape), vals, identity)
    red = alu.reduce(name, vals.reshape(dst.partitions, -1), (1,), True)
    red = fold_registers(api, red, name, reduce_cmd, reduce_init)
    if reduce_res is not None:
        write(reduce_res, reduce_rows(api, reduce_res, -red if negate else red), None, api)
    context.current().issue("vector", cost.MIN_II, (dst,), (reduce_res,) if reduce_res is not None else ())


def fold_registers(api: str, red: np.ndarray, name: str, reduce_cmd: Any, reduce_init: Any = None) -> np.ndarray:
    """An instruction's (P, 1) row reduction `red` under `reduce_cmd`, AWS's engine register commands:
    idle / reset_reduce: this instruction's reduction (from `reduce_init` when given); load_reduce: from
    `reduce_init`; reduce: onto what the previous instruction left; reset: the identity. The Vector
    engine's per-partition registers keep the result for the next `reduce`."""
    cmd = str(getattr(reduce_cmd, "name", reduce_cmd) or "reset_reduce")
    identity = alu.REDUCE.get(name, (None, 0.0))[1]
    p = red.shape[0]
    run = context.current()
    if run.vector_regs is None:
        run.vector_regs = np.zeros(run.target.pmax, np.float32)
    init = None
    if reduce_init is not None:
        init = read(reduce_init).reshape(-1, 1) if isinstance(reduce_init, NkiTensor) else np.float32(reduce_init)
    if cmd == "reset":
        red = np.full((p, 1), identity, np.float32)
    elif cmd == "reduce":
        red = alu.binary(name, run.vector_regs[:p].reshape(p, 1), red)
    elif cmd == "load_reduce":
        if init is None:
            raise fail(ERR_INVALID_ARG, f"'{api}' with reduce_cmd=load_reduce needs reduce_init (the value to load).",
                       "pass reduce_init=, or use reduce_cmd=reset_reduce.")
        red = alu.binary(name, red, init)
    elif cmd in ("reset_reduce", "idle"):
        if init is not None:
            red = alu.binary(name, red, init)
    else:
        raise fail(ERR_INVALID_ARG, f"'{api}': unknown reduce_cmd {reduce_cmd!r}.",
                   "use nisa.reduce_cmd.reset_reduce, reduce, load_reduce, reset or idle.")
    red = np.asarray(red, np.float32).reshape(p, 1)
    if cmd != "idle":
        run.vector_regs[:p] = red[:, 0]
    return red


def tensor_scalar_cumulative(dst: NkiTensor, src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = "reset_reduce", reverse0: bool = False,
                             mask: np.ndarray | None = None, api: str = "tensor_scalar_cumulative") -> None:
    """AWS's pseudocode, per partition: `reg = op1(op0(src[i], imm0), reg); dst[i] = reg` along the free dims.
    The Vector engine's accumulator registers persist between instructions: `reset_reduce` (and `idle`)
    starts from op1's identity, `load_reduce` from `imm1` (scalar or (P, 1)), `reduce` from where the
    previous cumulative instruction left them. Masked-off elements leave the register as it is."""
    operand = read(imm0) if isinstance(imm0, NkiTensor) else np.float32(imm0)
    n0 = alu.op_name(op0)
    vals = read(src, mask)
    x = alu.binary(n0, operand, vals) if reverse0 else alu.binary(n0, vals, operand)
    p = src.partitions
    x = np.asarray(x, dtype=np.float32).reshape(p, -1)
    name1 = alu.op_name(op1)
    if name1 not in _ACCUMULATORS and name1 != "subtract":
        raise fail(ERR_INVALID_ARG, f"'{api}' cannot accumulate with {name1}.",
                   "use add, subtract, multiply, maximum or minimum as op1.")
    cmd = str(getattr(reduce_cmd, "name", reduce_cmd) or "reset_reduce")
    run = context.current()
    if cmd in ("reset_reduce", "idle", "reset"):
        reg = np.full((p, 1), alu.REDUCE[name1][1], np.float32)
    elif cmd == "load_reduce":
        if imm1 is None:
            raise fail(ERR_INVALID_ARG, f"'{api}' with reduce_cmd=load_reduce needs imm1 (the initial value).",
                       "pass imm1= (a scalar or a (P, 1) tile), or use reduce_cmd=reset_reduce.")
        reg = read(imm1).reshape(-1, 1)[:p] if isinstance(imm1, NkiTensor) else np.full((p, 1), imm1, np.float32)
    elif cmd == "reduce":
        regs = run.vector_regs
        reg = (np.full((p, 1), alu.REDUCE[name1][1], np.float32) if regs is None else regs[:p].reshape(p, 1))
    else:
        raise fail(ERR_INVALID_ARG, f"'{api}': unknown reduce_cmd {reduce_cmd!r}.",
                   "use nisa.reduce_cmd.reset_reduce, reduce or load_reduce.")
    keep = None if mask is None else np.broadcast_to(mask, src.shape).reshape(x.shape)
    ufunc = _ACCUMULATORS.get(name1)
    if ufunc is not None and keep is None:
        # op1 is associative and commutative: a running reduction seeded with the register
        out = ufunc.accumulate(np.concatenate([reg.astype(np.float32), x], axis=1), axis=1)[:, 1:]
    else:  # subtract (reg = x - reg) or a mask: step along the free dim, each step over all partitions
        out = np.empty_like(x)
        prev = reg.reshape(-1).astype(np.float32)
        for i in range(x.shape[1]):
            nxt = alu.binary(name1, x[:, i], prev)
            prev = nxt if keep is None else np.where(keep[:, i], nxt, prev)
            out[:, i] = prev
    if run.vector_regs is None:
        run.vector_regs = np.zeros(run.target.pmax, np.float32)
    run.vector_regs[:p] = out[:, -1] if out.shape[1] else reg.reshape(-1)
    write(dst, out.reshape(dst.shape), mask, api)
    run.issue("vector", max(cost.MIN_II, 2 * dst.free_size), (src, imm0, imm1), (dst,))


def tensor_tensor_scan(dst: NkiTensor, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, api: str = "tensor_tensor_scan",
                       mask: np.ndarray | None = None) -> None:
    """res[:, i] = op1(op0(data0[:, i], res[:, i-1]), data1[:, i]); a sequential scan along the free dim."""
    a = read(data0, mask).reshape(dst.partitions, -1)
    b = read(data1, mask).reshape(dst.partitions, -1)
    prev = (read(initial).reshape(-1) if isinstance(initial, NkiTensor) else np.full(a.shape[0], initial, np.float32))
    n0, n1 = alu.op_name(op0), alu.op_name(op1)
    out = np.empty_like(a)
    for i in range(a.shape[1]):  # inherently sequential; each step is vectorised over partitions
        t = alu.binary(n0, prev, a[:, i]) if reverse0 else alu.binary(n0, a[:, i], prev)
        prev = alu.binary(n1, b[:, i], t) if reverse1 else alu.binary(n1, t, b[:, i])
        out[:, i] = prev
    write(dst, out.reshape(dst.shape), output_mask(api, mask, dst.shape), api)
    charge("vector", dst, [data0, data1, initial], max(cost.MIN_II, 2 * dst.free_size))
