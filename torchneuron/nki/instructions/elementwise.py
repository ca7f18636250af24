"""Element-wise instructions: tensor_tensor, tensor_scalar, scalar_tensor_tensor, activation, tensor_copy,
memset, and the `nl` element-wise functions / legacy tile operators built on them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import alu, context
from ..core.buffers import PSUM, SBUF
from ..core.tensor import NkiTensor
from ..errors import (
    ERR_ACT_BIAS_TYPE,
    ERR_ACT_SCALE_SHAPE,
    ERR_ACT_SCALE_TYPE,
    ERR_INVALID_ARG,
    ERR_MEMORY,
    ERR_PARTITION_MISMATCH,
    ERR_PARTITIONS,
    fail,
)
from . import matmul_group
from .common import (
    allocate,
    broadcast_shape,
    check_on_chip,
    check_partitions,
    mark_result,
    mask_for,
    memo_engine_name,
    read,
    read_raw,
    reduce_rows,
    write,
)

_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
_FAST16 = (dtypes.bfloat16, dtypes.float16)
_ONE_PASS_OPS = ("add", "multiply", "subtract")  # tensor_tensor's one-pass operators in AWS's cost table


def _per_partition(t: Any) -> int:
    return t.free_size if isinstance(t, NkiTensor) else 1


def strided_penalty(*operands: Any) -> float:
    """Free-dim steps wider than 16 bytes halve SBUF bandwidth (reference §3): such instructions take 2x."""
    for t in operands:
        if isinstance(t, NkiTensor) and t.strides and t.index is None and t.buffer.on_chip:
            shape, strides, pdim = t.shape, t.strides, t.pdim
            for d in range(len(shape) - 1, -1, -1):  # the innermost free dim that moves
                if d != pdim and shape[d] > 1:
                    if abs(strides[d]) * dtypes.itemsize(t.dtype) > 16:
                        return 2.0
                    break
    return 1.0


def free_broadcast(t: NkiTensor) -> bool:
    """One value per partition spread along the free dims (`t - mean` with mean (P, 1), or a stride-0
    view): the compiler folds it into the instruction as a tensor_scalar operand, streaming nothing."""
    if t.index is not None or t.free_size <= 1:
        return t.index is None
    strides = t.strides or ()
    return all(strides[d] == 0 for d, n in enumerate(t.shape) if d != t.pdim and n > 1)


def partition_broadcast(t: NkiTensor) -> bool:
    """One partition's row repeated over partitions (`row.broadcast_to((128, n))`): no access pattern
    reaches another partition's data, so the compiler makes the copy on the Tensor engine (a matmul with
    a ones row, the tutorials' "partition-dim broadcast ... a separate instruction on TensorE")."""
    if t.index is not None or t.partitions <= 1 or t.pdim is None or not t.strides:
        return False
    return t.strides[t.pdim] == 0


def _broadcast_on_pe(run: Any, t: NkiTensor) -> bool:
    """Charges the Tensor-engine broadcast of `t`; True when its result stays in PSUM for the consumer
    (it fits the PSUM: wider rows are drained to SBUF, where the consumer streams it like any operand)."""
    row_bytes = t.free_size * dtypes.itemsize(t.dtype)
    fp32 = dtypes.itemsize(t.dtype) == 4
    chunks = -(-t.free_size // 512)  # one PSUM bank per matmul
    cycles = chunks * cost.matmul_cycles(t.partitions, min(t.free_size, 512), fp32)
    in_psum = row_bytes <= run.target.psum_bytes_per_partition
    if in_psum:  # materialised per use (nothing keeps a PSUM copy alive across instructions)
        run.issue("tensor", cycles, (t,), (t,), cost.MM_INIT_LATENCY)
    return in_psum


def _vector_cost(api: str, dst: NkiTensor, inputs: list[Any], kind: str, engine: Any = None,
                 pure: tuple | None = None, passes: int | None = None, op: str | None = None,
                 mask: Any = None) -> None:
    """Charges an elementwise instruction on `engine` (as the caller got it: resolved here, after the gate).
    Operands are streamed unless broadcast along the free dims (folded in, `free_broadcast`); a partition
    broadcast is made on the Tensor engine and read from PSUM (`partition_broadcast`). `pure`: the ops, when
    the result is a function of them and the operands alone, for `KernelRun.issue` (dropped under a `mask`,
    which leaves part of dst as it was). `passes`: the
    documented cycles per element when the instruction's own rule fixes them (scalar_tensor_tensor); `op`:
    a two-input instruction's operator (AWS's tensor_tensor table: one pass over two SBUF inputs only for
    bf16 add, multiply or subtract)."""
    run = context.current()
    if not run.accounting:  # a repeat of a checked signature charges nothing
        return
    engine = _engine_name(engine, "vector")
    tensors = [t for t in inputs if isinstance(t, NkiTensor)]
    n = dst.free_size
    for t in tensors:
        if t.free_size > n:
            n = t.free_size
    if len(tensors) < len(inputs) and n < 1:  # a scalar operand counts one element
        n = 1
    if engine == "gpsimd":
        cycles = cost.gpsimd_cycles(n)
    elif engine == "scalar":
        cycles = cost.scalar_cycles(n)
    else:
        fast = dst.dtype in _FAST16 and all(t.dtype in _FAST16 for t in tensors)
        streamed = 0
        psum = False
        for t in tensors:
            if t.buffer.name == "psum":
                psum = True
            elif len(tensors) >= 2 and free_broadcast(t):
                continue
            elif len(tensors) >= 2 and partition_broadcast(t) and _broadcast_on_pe(run, t):
                psum = True
            streamed += 1
        one_pass = dst.dtype == dtypes.bfloat16 and all(t.dtype == dtypes.bfloat16 for t in tensors) and (
            op is None or op in _ONE_PASS_OPS)
        two = streamed >= 2 and not psum and not one_pass
        cycles = cost.vector_cycles(run.target, n, passes or (2 if two else 1), fast, kind)
    cycles *= strided_penalty(dst, *inputs)
    run.issue(engine, cycles, inputs, (dst,), cost.SBUF_ACCESS_CYCLES, pure=None if mask is not None else pure)


def _engine_name(engine: Any, default: str) -> str:
    return memo_engine_name(("elementwise", type(engine), engine, default), lambda: _resolve_engine(engine, default))


def _resolve_engine(engine: Any, default: str) -> str:
    name = getattr(engine, "name", engine)
    if name in (None, "unknown", 0):
        return default
    name = str(name).removesuffix("_engine")
    if name == "act":
        name = "scalar"
    if name == "pool":
        name = "gpsimd"
    return name if name in ("vector", "scalar", "gpsimd", "tensor") else default


def _check_compute(api: str, dst: NkiTensor, **operands: Any) -> None:
    if not context.current().accounting:
        return  # a repeat of a checked signature: the same operands passed these checks then
    check_on_chip(dst, api, "dst")
    check_partitions(dst, api, "dst")
    for arg, t in operands.items():
        check_on_chip(t, api, arg)
        check_partitions(t, api, arg)


def tensor_tensor(dst: NkiTensor, data1: Any, data2: Any, op: Any, engine: Any = None, mask: np.ndarray | None = None,
                  api: str = "tensor_tensor") -> None:
    name = alu.op_name(op)
    if context.current().accounting:  # a repeat of a checked signature passed these checks
        _check_compute(api, dst, data1=data1, data2=data2)
        if isinstance(data1, NkiTensor) and isinstance(data2, NkiTensor) and data1.buffer.name == "psum" \
                and data2.buffer.name == "psum":
            raise fail(ERR_MEMORY, f"both inputs of '{api}' are in PSUM; the Vector engine reads at most one PSUM "
                       "operand per instruction.", "copy one operand to SBUF first (nl.copy / nisa.tensor_copy).")
        broadcast_shape(api, data1, data2)
    if alu.is_bitvec(name):
        values = alu.binary(name, read_raw(data1, mask), read_raw(data2, mask))
    else:
        values = alu.binary(name, read(data1, mask), read(data2, mask))
    write(dst, values, mask, api)
    _vector_cost(api, dst, [data1, data2], "tensor_tensor", engine, (name,), op=name, mask=mask)


def _scalar_operand(v: Any, dst: NkiTensor, api: str, arg: str) -> Any:
    """tensor_scalar operands are fp32 scalars or (P, 1) vectors broadcast along the free dims."""
    if isinstance(v, NkiTensor):
        check_on_chip(v, api, arg)
        if v.free_size != 1:
            raise fail(ERR_ACT_SCALE_SHAPE, f"operand '{arg}' of '{api}' has shape {v.shape}; it must be a scalar "
                       "or a (partitions, 1) vector.", "reduce it to one value per partition first.")
        vals = read(v)
        return vals.reshape((v.partitions,) + (1,) * (dst.ndim - 1)) if dst.ndim else vals
    return np.float32(v)


def tensor_scalar(dst: NkiTensor, data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, engine: Any = None, mask: np.ndarray | None = None,
                  api: str = "tensor_scalar") -> None:
    _check_compute(api, dst, data=data)
    x = read(data, mask)
    bitvec = alu.is_bitvec(alu.op_name(op0))
    if bitvec:
        x = read_raw(data, mask)
    for op, operand, reverse in ((op0, operand0, reverse0), (op1, operand1, reverse1)):
        if op is None:
            continue
        s = _scalar_operand(operand, dst, api, "operand")
        name = alu.op_name(op)
        x = alu.binary(name, s, x) if reverse else alu.binary(name, x, s)
    write(dst, x, mask, api)
    pure = (alu.op_name(op0), reverse0, None if op1 is None else alu.op_name(op1), reverse1)
    _vector_cost(api, dst, [data, operand0, operand1], "tensor_scalar", engine, pure, mask=mask)


def scalar_tensor_tensor(dst: NkiTensor, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any,
                         reverse0: bool = False, reverse1: bool = False, mask: np.ndarray | None = None,
                         api: str = "scalar_tensor_tensor") -> None:
    _check_compute(api, dst, data=data, operand1=operand1)
    s = _scalar_operand(operand0, dst, api, "operand0")
    x = read(data, mask)
    n0 = alu.op_name(op0)
    x = alu.binary(n0, s, x) if reverse0 else alu.binary(n0, x, s)
    t = read(operand1, mask)
    n1 = alu.op_name(op1)
    x = alu.binary(n1, t, x) if reverse1 else alu.binary(n1, x, t)
    write(dst, x, mask, api)
    # AWS's cost table: N cycles when data and operand1 are bf16, op0 subtract, op1 multiply and N even; else 2N
    n = data.free_size if isinstance(data, NkiTensor) else 1
    single = (n0, n1) == ("subtract", "multiply") and n % 2 == 0 and all(
        isinstance(t, NkiTensor) and t.dtype == dtypes.bfloat16 for t in (data, operand1))
    _vector_cost(api, dst, [data, operand0, operand1], "stt",
                 pure=(n0, reverse0, n1, reverse1), passes=1 if single else 2, mask=mask)


def _activation_vector(v: Any, dst: NkiTensor, api: str, arg: str, code_type: str) -> Any:
    if v is None:
        return np.float32(0)
    if isinstance(v, NkiTensor):
        check_on_chip(v, api, arg)
        if v.free_size != 1 or v.partitions not in (1, dst.partitions):
            raise fail(ERR_ACT_SCALE_SHAPE, f"'{arg}' of '{api}' has shape {v.shape}; it must be a scalar or a "
                       f"({dst.partitions}, 1) vector.", "pass one value per partition.")
        # AWS's compiler accepts a bf16/fp16 bias vector (the engine reads it into fp32); scale stays fp32
        if v.dtype != dtypes.float32 and not (arg == "bias" and v.dtype in (dtypes.bfloat16, dtypes.float16)):
            code = ERR_ACT_SCALE_TYPE if arg == "scale" else ERR_ACT_BIAS_TYPE
            raise fail(code, f"'{arg}' of '{api}' is {dtypes.name(v.dtype)}; the Scalar engine takes an fp32 "
                       f"{arg}.", f"make the {arg} tile float32.")
        return read(v).reshape((v.partitions,) + (1,) * (dst.ndim - 1))
    if isinstance(v, (int, float, np.floating, np.integer)):
        return np.float32(v)
    code = ERR_ACT_SCALE_TYPE if arg == "scale" else ERR_ACT_BIAS_TYPE
    raise fail(code, f"'{arg}' of '{api}' is a {type(v).__name__}.", "pass a Python float or an fp32 (P, 1) tile.")


def activation(dst: NkiTensor, op: Any, data: Any, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: NkiTensor | None = None, reduce_cmd: Any = None, mask: np.ndarray | None = None,
               api: str = "activation") -> None:
    """Scalar engine: dst = op(data * scale + bias), fp32 inside; optional free-dim reduction."""
    _check_compute(api, dst, data=data)
    name = alu.op_name(op)
    x = read(data, mask)
    pre = x * _activation_vector(scale, dst, api, "scale", "scale") + _activation_vector(bias, dst, api, "bias", "bias")
    out = alu.unary(name, pre.astype(np.float32, copy=False))  # pre is a temporary: no copy when already fp32
    write(dst, out, mask, api)
    run = context.current()
    reduce_registers(api, out, reduce_op, reduce_res, reduce_cmd)
    cycles = cost.scalar_cycles(_per_partition(dst), reduce_res is not None) * strided_penalty(dst, data)
    # the reduce registers carry state between instructions: an instruction using them is not pure
    idle = reduce_res is None and str(getattr(reduce_cmd, "name", reduce_cmd) or "idle") == "idle"
    pure = (name,) if mask is None and idle else None
    run.issue("scalar", cycles, (data, bias, scale), (dst, reduce_res), cost.SBUF_ACCESS_CYCLES, pure=pure)


def reduce_registers(api: str, out: np.ndarray, reduce_op: Any, reduce_res: NkiTensor | None, reduce_cmd: Any) -> None:
    """The Scalar engine's 128 internal reduce registers (one per partition), driven by `reduce_cmd`:
    reset zeroes them, reduce folds this instruction's row reduction in, reset_reduce starts from it,
    load_reduce starts from `reduce_res`. A `reduce_res` with the idle command reduces this instruction
    alone (reset_reduce), which is what kernels passing only reduce_res expect."""
    cmd = str(getattr(reduce_cmd, "name", reduce_cmd) or "idle")
    if reduce_res is None and cmd == "idle":
        return
    if cmd == "idle":
        cmd = "reset_reduce"
    run = context.current()
    rname = alu.op_name(reduce_op or "add", "reduce_op")
    identity = alu.REDUCE.get(rname, (None, 0.0))[1]
    if run.reduce_regs is None:
        run.reduce_regs = np.full(run.target.pmax, identity, dtype=np.float32)
    regs = run.reduce_regs
    p = out.shape[0] if out.ndim else 1
    red = alu.reduce(rname, out.reshape(p, -1), (1,), keepdims=False) if cmd != "reset" else None
    if cmd == "reset":
        regs[:] = identity
    elif cmd == "reset_reduce":
        regs[:p] = red
    elif cmd == "load_reduce":
        if reduce_res is None:
            raise fail(ERR_INVALID_ARG, f"'{api}' with reduce_cmd=load_reduce needs reduce_res to load from.",
                       "pass reduce_res, or use reduce_cmd=reset_reduce.")
        regs[:p] = alu.binary(rname, read(reduce_res).reshape(-1)[:p], red)
    elif cmd == "reduce":
        regs[:p] = alu.binary(rname, regs[:p], red)
    else:
        raise fail(ERR_INVALID_ARG, f"'{api}': unknown reduce_cmd {reduce_cmd!r}.",
                   "use nisa.reduce_cmd.idle / reset / reduce / reset_reduce / load_reduce.")
    if reduce_res is not None:
        check_on_chip(reduce_res, api, "reduce_res")
        write(reduce_res, reduce_rows(api, reduce_res, regs[:p]), None, api)


def tensor_copy(dst: NkiTensor, src: Any, engine: Any = None, mask: np.ndarray | None = None,
                api: str = "tensor_copy", scalar_from_v3: bool = False) -> None:
    """`scalar_from_v3`: the current API's tensor_copy, which AWS documents as Vector/GpSimd only on
    NeuronCore-v2 (the legacy one copies there through fp32 on the Scalar engine)."""
    eng = _engine_name(engine, "vector")
    _check_compute(api, dst, src=src)
    if scalar_from_v3 and eng == "scalar" and context.current().target.generation < 3:
        raise fail(ERR_INVALID_ARG, f"'{api}' to `{dst.name}` {dst.shape}: the Scalar engine has no tensor_copy "
                   f"on NeuronCore-v2 (target {context.current().target.name}).",
                   "use engine=nisa.vector_engine, or copy on the Scalar engine with "
                   "nisa.activation(dst, op=nl.copy, data=src).")
    if eng == "gpsimd" and (dst.buffer == PSUM or (isinstance(src, NkiTensor) and src.buffer == PSUM)):
        raise fail(ERR_MEMORY, f"'{api}' on the GpSimd engine cannot access PSUM.", "use engine=nisa.vector_engine.")
    if isinstance(src, NkiTensor) and src.dtype == dst.dtype and eng != "scalar":
        values = src.read(mask_for(mask, src.shape))
        if values.shape != dst.shape:
            values = np.broadcast_to(values, dst.shape)
        dst.write(values, mask_for(mask, dst.shape))
    else:
        write(dst, read(src, mask), mask, api)
    _vector_cost(api, dst, [src], "copy", eng, ("copy",), mask=mask)


def memset(dst: NkiTensor, value: Any, engine: Any = None, mask: np.ndarray | None = None, api: str = "memset") -> None:
    _check_compute(api, dst)
    write(dst, np.float32(value) if dtypes.is_float(dst.dtype) else np.int64(value), mask, api)
    run = context.current()
    n = dst.free_size
    fast = dst.itemsize == 2 and float(value) == 0.0
    run.issue(_engine_name(engine, "vector"), max(cost.MIN_II, n // 2 if fast else n), (), (dst,))


# ---- nl element-wise functions (return new tiles) ----

def _result_dtype(name: str, operands: list[Any], dtype: Any) -> np.dtype:
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    if name in _COMPARISONS and context.current().api == "legacy":
        return dtypes.bool_
    dts = [t.dtype if isinstance(t, NkiTensor) else dtypes.scalar_dtype(t) for t in operands]
    out = dtypes.result_dtype(*dts)
    if name == "divide" and out.kind in "iub" and context.current().api == "legacy":
        # legacy `int_tile / n` is true division (AWS's kernels floor it afterwards: resize-nearest's
        # `nl.floor(pos / w, dtype=nl.int32)`); an integer result would round 58.5 up before the floor
        return dtypes.float32
    return out


def nl_binary(name: str, x: Any, y: Any, dtype: Any = None, mask: np.ndarray | None = None) -> NkiTensor:
    if not isinstance(x, NkiTensor) and not isinstance(y, NkiTensor):
        raise fail(ERR_INVALID_ARG, f"nl.{name} needs at least one tile operand.", "pass a tile.")
    shape = broadcast_shape(name, x, y)
    if shape and shape[0] > context.current().target.pmax:
        raise fail(ERR_PARTITIONS, f"number of partitions {shape[0]} exceed architecture limitation of "
                   f"{context.current().target.pmax}.", "tile the partition dimension.")
    dst = allocate(shape, _result_dtype(name, [x, y], dtype), SBUF)
    tensors = [t for t in (x, y) if isinstance(t, NkiTensor)]
    if len(tensors) == 2:
        tensor_tensor(dst, x, y, name, mask=mask, api=f"nl.{name}")
    elif isinstance(x, NkiTensor):
        tensor_scalar(dst, x, name, y, mask=mask, api=f"nl.{name}")
    else:
        tensor_scalar(dst, y, name, x, reverse0=True, mask=mask, api=f"nl.{name}")
    return mark_result(dst, mask)


_VECTOR_UNARY = {"abs", "negative", "sign", "ceil", "floor", "trunc", "logical_not", "invert", "copy", "reciprocal"}


def nl_unary(name: str, x: Any, dtype: Any = None, mask: np.ndarray | None = None) -> NkiTensor:
    if not isinstance(x, NkiTensor):
        raise fail(ERR_INVALID_ARG, f"nl.{name} needs a tile operand, got {type(x).__name__}.", "pass a tile.")
    dst = allocate(x.shape, _result_dtype(name, [x], dtype), SBUF)
    if name == "invert":
        _check_compute(f"nl.{name}", dst, x=x)
        write(dst, np.invert(read_raw(x, mask).astype(np.int64)), mask, f"nl.{name}")
        _vector_cost(f"nl.{name}", dst, [x], "tensor_scalar", pure=(name,), mask=mask)
    elif name in _VECTOR_UNARY:
        _check_compute(f"nl.{name}", dst, x=x)
        write(dst, alu.unary(name, read(x, mask)), mask, f"nl.{name}")
        _vector_cost(f"nl.{name}", dst, [x], "tensor_scalar", pure=(name,), mask=mask)
    else:
        activation(dst, name, x, mask=mask, api=f"nl.{name}")
    return mark_result(dst, mask)


def operator_call(name: str, a: Any, b: Any) -> NkiTensor:
    run = context.current()
    if run.api == "current":
        raise fail(ERR_INVALID_ARG, f"tensor operator for '{name}' used in an `nki` (current API) kernel; NkiTensor "
                   "defines no arithmetic operators.", f"call nl.{name}(a, b) (or nisa.tensor_tensor) instead.")
    if isinstance(a, NkiTensor) and isinstance(b, NkiTensor) and a.partitions != b.partitions:
        raise fail(ERR_PARTITION_MISMATCH, f"tile operator '{name}' on {a.partitions} and {b.partitions} partitions: "
                   "operators broadcast along free dims only.",
                   f"call nl.{name}(a, b), which broadcasts a 1-partition operand, or broadcast_to first.")
    return nl_binary(name, a, b)


def inplace_call(name: str, target: NkiTensor, other: Any) -> None:
    """`t += x` on a legacy tile computes into `t` itself (PSUM += PSUM is the near-memory accumulate)."""
    run = context.current()
    if run.api == "current":
        raise fail(ERR_INVALID_ARG, f"in-place operator for '{name}' used in an `nki` (current API) kernel.",
                   f"call nisa.tensor_tensor(dst=t, data1=t, data2=x, op=nl.{name}).")
    if target.buffer.is_hbm:
        raise fail(ERR_MEMORY, f"in-place '{name}' on HBM tensor `{target.name}`.", "accumulate in an SBUF/PSUM tile "
                   "and nl.store it.")
    if name == "add" and target.buffer == PSUM and isinstance(other, NkiTensor) and other.buffer == PSUM:
        # `psum += nl.matmul(...)`: the matmul accumulates in PSUM itself. Elements never written start
        # the accumulation group (on hardware the group's first matmul overwrites), so an uninitialised
        # `nl.ndarray(..., buffer=nl.psum)` accumulator works as on hardware.
        fresh = run.accounting and run.memory.produced_last(other.storage)
        if target.storage.zero_fill is not None:
            run.fold_zero_fill(target.storage, fresh and target.index is None and target.size == target.storage.size)
        if matmul_group.merge_into(target, other):
            run.issue_move((target, other), (target,))
            if fresh:
                run.memory.fold(other.storage)  # the matmul accumulated into `target` itself
            return
        incoming = read(other)
        started = target.written_values()
        values = incoming if not started.any() else np.where(started, read(target) + incoming, incoming)
        produced = other.storage.result_mask if other.shape == other.storage.shape else None
        write(target, values, mask_for(produced, target.shape) if produced is not None else None, "+=")
        run.issue_move((target, other), (target,))
        if fresh:
            run.memory.fold(other.storage)  # the matmul accumulated into `target` itself
        return
    if isinstance(other, NkiTensor):
        tensor_tensor(target, target, other, name, api=f"{name}=")
    else:
        tensor_scalar(target, target, name, other, api=f"{name}=")


def copy_as(t: NkiTensor, dtype: Any) -> NkiTensor:
    check_on_chip(t, "astype", "x")
    dst = allocate(t.shape, dtype, SBUF)
    tensor_copy(dst, t, api="astype")
    return dst

