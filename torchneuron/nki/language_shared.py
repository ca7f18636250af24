"""The `nki.language` functions both API generations share. Legacy calls pass `mask=`; the current API has
no masks and the same functions simply never receive one."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from . import dtypes as _dt
from .core import context as _ctx
from .core import hoist as _hoist
from .core.buffers import HBM as _HBM
from .core.buffers import PRIVATE_HBM as _PRIVATE_HBM
from .core.buffers import PSUM as _PSUM
from .core.buffers import SBUF as _SBUF
from .core.buffers import SHARED_HBM as _SHARED_HBM
from .core.buffers import Buffer as _Buffer
from .core.buffers import Placement as _Placement
from .core.indexing import Mask
from .core.indexing import ds as ds
from .core.tensor import NkiTensor
from .errors import ERR_INVALID_ARG, ERR_MEMORY, fail
from .instructions import dma as _dma
from .instructions import elementwise as _ew
from .instructions import gather as _gather
from .instructions import matmul as _mm
from .instructions import reduce as _red
from .instructions import rng as _rng
from .instructions.common import allocate as _allocate
from .instructions.common import charge as _charge
from .instructions.common import mark_result as _mark
from .instructions.common import mask_array as _mask
from .instructions.common import read as _read
from .instructions.common import write as _write

# dtypes
float32, float16, bfloat16, tfloat32 = _dt.float32, _dt.float16, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e4m3fn, float8_e5m2, float8_e8m0fnu = (_dt.float8_e4m3, _dt.float8_e4m3fn, _dt.float8_e5m2,
                                                           _dt.float8_e8m0fnu)
float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4 = _dt.float8_e4m3fn_x4, _dt.float8_e5m2_x4, _dt.float4_e2m1fn_x4
int8, int16, int32, bool_ = _dt.int8, _dt.int16, _dt.int32, _dt.bool_
uint8, uint16, uint32 = _dt.uint8, _dt.uint16, _dt.uint32
finfo = _dt.finfo

# buffers
sbuf, psum, hbm, private_hbm, shared_hbm = _SBUF, _PSUM, _HBM, _PRIVATE_HBM, _SHARED_HBM


class _Fp32:
    """`nl.fp32.min`: the most negative finite fp32 (0xff7fffff), the identity of a max-reduce."""

    min = float(np.finfo(np.float32).min)
    max = float(np.finfo(np.float32).max)


fp32 = _Fp32()


class _TileSize:
    """`nl.tile_size`: per-target tile limits (reference §2.8)."""

    pmax = 128
    gemm_stationary_fmax = 128
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1

    def _t(self) -> Any:
        run = _ctx.active()
        from .hardware import current_target
        return run.target if run else current_target()

    @property
    def psum_fmax(self) -> int:
        return self._t().psum_bank_bytes // 4

    psum_bank_fmax = psum_fmax

    @property
    def psum_bank_fmax_bytes(self) -> int:
        return self._t().psum_bank_bytes

    @property
    def psum_num_banks(self) -> int:
        return self._t().psum_banks

    @property
    def gemm_moving_fmax(self) -> int:
        return self._t().gemm_moving_fmax

    @property
    def sbuf_fmax_bytes(self) -> int:
        return self._t().sbuf_bytes_per_partition

    total_available_sbuf_size = sbuf_fmax_bytes

    @property
    def sbuf_fmax(self) -> int:
        return self._t().sbuf_bytes_per_partition // 4

    @property
    def sbuf_size_bytes(self) -> int:
        return self._t().sbuf_bytes_per_partition * self._t().pmax


tile_size = _TileSize()


# ---- creation ----

def _buffer(buffer: Any) -> _Buffer:
    if isinstance(buffer, _Buffer):
        return buffer
    if isinstance(buffer, _Placement):
        return buffer.buffer
    if buffer is None:
        return _SBUF
    raise fail(ERR_MEMORY, f"{buffer!r} is not a buffer.", "use nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm.")


def _on_chip(shape: Any, dtype: Any, buffer: Any, name: str, resolved: _Buffer | None = None) -> NkiTensor:
    """Allocate on chip; a manual placement (legacy mod_alloc / alloc) decides a block tensor's tiles.
    `resolved`: `_buffer(buffer)`, when the caller has it already."""
    if not isinstance(buffer, _Placement):
        return _allocate(shape, dtype, resolved or _buffer(buffer), name)
    from .core.indexing import split_shape
    plain, paxis = split_shape(shape)
    block_bytes = int(np.prod(plain[paxis + 1:], dtype=np.int64)) * _dt.itemsize(_dt.as_dtype(dtype))
    tiles = buffer.physical_tiles(plain[:paxis], plain[paxis], block_bytes)
    t = _allocate(shape, dtype, buffer.buffer, name, physical_tiles=tiles)
    live = getattr(t.storage, "live", None)
    if live is not None and hasattr(live, "interval"):  # accounted: the banks it names (core.memory.finish)
        target = _ctx.current().target
        live.interval.banks = buffer.psum_banks(plain[:paxis], plain[paxis], block_bytes, target.psum_bank_bytes,
                                                target.psum_banks)
    return t


def ndarray(shape: Any, dtype: Any, buffer: Any = None, name: str = "", address: Any = None,
            init: Any = None) -> NkiTensor:
    """An uninitialised tensor (reads as NaN / 4 until written)."""
    b = _buffer(buffer)
    if b.is_hbm:
        return _dma.hbm_array(shape, dtype, b, name, init)
    if buffer is b:  # a plain buffer, not a manual placement: the allocation itself
        return _allocate(shape, dtype, b, name)
    return _on_chip(shape, dtype, buffer, name, b)


def _filled(shape: Any, value: Any, dtype: Any, buffer: Any, name: str) -> NkiTensor:
    b = _buffer(buffer)
    if b.is_hbm:
        return _dma.hbm_array(shape, dtype, b, name, init=value)
    t = _on_chip(shape, dtype, buffer, name)
    _ew.memset(t, value, api="nl.full")
    if b is _PSUM and float(value) == 0.0:
        _ctx.current().zero_filled(t.storage)
    return t


def zeros(shape: Any, dtype: Any, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> NkiTensor:
    return _filled(shape, 0, dtype, buffer, name)


def ones(shape: Any, dtype: Any, buffer: Any = None, name: str = "", lazy_initialization: bool = False) -> NkiTensor:
    return _filled(shape, 1, dtype, buffer, name)


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = None, name: str = "",
         lazy_initialization: bool = False) -> NkiTensor:
    return _filled(shape, fill_value, dtype, buffer, name)


def zeros_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    return zeros(x.shape, dtype if dtype is not None else x.dtype, buffer or x.buffer, name)


def ones_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    return ones(x.shape, dtype if dtype is not None else x.dtype, buffer or x.buffer, name)


def empty_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    return ndarray(x.shape, dtype if dtype is not None else x.dtype, buffer or x.buffer, name)


def rand(shape: Any, dtype: Any = float32, buffer: Any = None, name: str = "") -> NkiTensor:
    t = _allocate(shape, dtype, _buffer(buffer))
    _rng.rand(t)
    return t


def random_seed(seed: Any) -> None:
    _rng.rng_state().seed(_read(seed).astype(np.int64) if isinstance(seed, NkiTensor) else int(seed))


def shared_constant(constant: Any, dtype: Any = None) -> NkiTensor:
    return _dma.shared_constant(constant, dtype)


def shared_identity_matrix(n: int, dtype: Any = uint8) -> NkiTensor:
    return _dma.shared_constant(np.eye(int(n)), dtype)


# ---- memory movement ----

def load(src: NkiTensor, dtype: Any = None, mask: Any = None, mode: Any = None) -> NkiTensor:
    """`mode=oob_mode.skip` (AWS's neuron-team kernels pass it to legacy loads through an index tile): the
    elements an indirect index puts outside the tensor are not read and their destinations not written."""
    return _dma.load(src, dtype, _mask(mask), oob_skip=_dma.skips_out_of_bounds(mode))


def store(dst: NkiTensor, value: Any, mask: Any = None, mode: Any = None) -> None:
    _dma.store(dst, value, _mask(mask), oob_skip=_dma.skips_out_of_bounds(mode))


def load_transpose2d(src: NkiTensor, dtype: Any = None, mask: Any = None) -> NkiTensor:
    return _dma.load_transpose2d(src, dtype, _mask(mask))


def atomic_rmw(dst: NkiTensor, value: Any, op: Any, mask: Any = None) -> None:
    """Read-modify-write of an HBM view with an on-chip value (DMA compute)."""
    _dma.dma_copy(dst, value, _mask(mask), dst_rmw_op=op, api="atomic_rmw")


def matmul(x: NkiTensor, y: NkiTensor, transpose_x: bool = False, mask: Any = None) -> NkiTensor:
    return _mm.nl_matmul(x, y, transpose_x, _mask(mask))


def transpose(x: NkiTensor, dtype: Any = None, mask: Any = None) -> NkiTensor:
    run = _ctx.current()
    return _mm.nl_transpose(x, dtype, _PSUM if run.api == "current" else _SBUF, _mask(mask))


def broadcast_to(x: NkiTensor, shape: Any) -> NkiTensor:
    return x.broadcast_to(shape)


def expand_dims(x: NkiTensor, axis: Any) -> NkiTensor:
    for a in sorted(axis if isinstance(axis, (tuple, list)) else (axis,)):
        x = x.expand_dim(a)
    return x


def where(condition: Any, x: Any, y: Any, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """x where condition else y; the condition is a tile or a legacy `nl.arange` predicate."""
    predicate = isinstance(condition, Mask)
    shaped = [t for t in (condition, x, y) if isinstance(t, (NkiTensor, Mask))]
    shape = np.broadcast_shapes(*(t.shape for t in shaped))
    dts = [t.dtype if isinstance(t, NkiTensor) else _dt.scalar_dtype(t) for t in (x, y)]
    dst = _allocate(shape, dtype if dtype is not None else _dt.result_dtype(*dts), _SBUF)
    c = condition.values if predicate else _read(condition) != 0
    _write(dst, np.where(c, _read(x), _read(y)), _mask(mask), "nl.where")
    _charge("vector", dst, [condition, x, y])
    return _mark(dst, _mask(mask))


def gather_flattened(data: NkiTensor, indices: NkiTensor, axis: int = 0, dtype: Any = None,
                     mask: Any = None) -> NkiTensor:
    dst = _allocate(indices.shape, dtype if dtype is not None else data.dtype, _SBUF)
    _gather.gather_flattened(dst, data, indices, mask=_mask(mask))
    return _mark(dst, _mask(mask))


# ---- element-wise (each function is also the operator constant for nisa `op=` arguments) ----

def _binary(name: str) -> Any:
    def fn(x: Any, y: Any, dtype: Any = None, mask: Any = None) -> NkiTensor:
        return _ew.nl_binary(name, x, y, dtype, _mask(mask))
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op = name  # type: ignore[attr-defined]
    return fn


def _unary(name: str) -> Any:
    def fn(x: Any, dtype: Any = None, mask: Any = None) -> NkiTensor:
        return _ew.nl_unary(name, x, dtype, _mask(mask))
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op = name  # type: ignore[attr-defined]
    return fn


add, subtract, multiply, divide = _binary("add"), _binary("subtract"), _binary("multiply"), _binary("divide")
maximum, minimum, abs_max, abs_min = _binary("maximum"), _binary("minimum"), _binary("abs_max"), _binary("abs_min")
power, fmod, mod = _binary("power"), _binary("fmod"), _binary("mod")
equal, not_equal, less, less_equal = _binary("equal"), _binary("not_equal"), _binary("less"), _binary("less_equal")
greater, greater_equal = _binary("greater"), _binary("greater_equal")
logical_and, logical_or, logical_xor = _binary("logical_and"), _binary("logical_or"), _binary("logical_xor")
bitwise_and, bitwise_or, bitwise_xor = _binary("bitwise_and"), _binary("bitwise_or"), _binary("bitwise_xor")
left_shift, right_shift = _binary("left_shift"), _binary("right_shift")

abs, square, exp, log, sqrt, rsqrt = (_unary(n) for n in ("abs", "square", "exp", "log", "sqrt", "rsqrt"))  # noqa: A001
reciprocal, negative, sign, ceil, floor, trunc = (_unary(n) for n in ("reciprocal", "negative", "sign", "ceil",
                                                                       "floor", "trunc"))
sin, cos, tan, arctan, tanh, sigmoid = (_unary(n) for n in ("sin", "cos", "tan", "arctan", "tanh", "sigmoid"))
relu, gelu, gelu_dx, gelu_apprx_tanh = (_unary(n) for n in ("relu", "gelu", "gelu_dx", "gelu_apprx_tanh"))
gelu_apprx_sigmoid, gelu_apprx_sigmoid_dx = _unary("gelu_apprx_sigmoid"), _unary("gelu_apprx_sigmoid_dx")
silu, silu_dx, softplus = _unary("silu"), _unary("silu_dx"), _unary("softplus")
mish, erf, erf_dx = _unary("mish"), _unary("erf"), _unary("erf_dx")
logical_not, invert = _unary("logical_not"), _unary("invert")


def copy(x: NkiTensor, dtype: Any = None, mask: Any = None) -> NkiTensor:
    if not isinstance(x, NkiTensor) or x.buffer.is_hbm:
        raise fail(ERR_MEMORY, "Expected operand 'x' of 'copy' to be in address space 'sbuf' or 'psum'.",
                   "nl.load HBM tensors; nl.copy copies on-chip tiles.")
    dst = _allocate(x.shape, dtype if dtype is not None else x.dtype, _SBUF)
    _ew.tensor_copy(dst, x, mask=_mask(mask), api="nl.copy")
    return _mark(dst, _mask(mask))


copy._nki_op = "copy"  # type: ignore[attr-defined]


# ---- reductions and composites ----

def _reduction(name: str, op: str) -> Any:
    def fn(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: bool = False, mask: Any = None) -> NkiTensor:
        return _red.nl_reduce(name, x, axis, dtype, keepdims, _mask(mask))
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op = op  # type: ignore[attr-defined]
    return fn


sum = _reduction("sum", "add")  # noqa: A001
max = _reduction("max", "maximum")  # noqa: A001
min = _reduction("min", "minimum")  # noqa: A001
prod = _reduction("prod", "multiply")
mean = _reduction("mean", "add")
var = _reduction("var", "add")
all = _reduction("all", "logical_and")  # noqa: A001


def softmax(x: NkiTensor, axis: Any = -1, dtype: Any = None, compute_dtype: Any = None,
            mask: Any = None) -> NkiTensor:
    return _red.nl_softmax(x, axis, dtype, _mask(mask))


def rms_norm(x: NkiTensor, w: Any, axis: Any, n: int, epsilon: float = 1e-6, dtype: Any = None,
             compute_dtype: Any = None, mask: Any = None) -> NkiTensor:
    return _red.nl_rms_norm(x, w, axis, n, epsilon, dtype, compute_dtype, _mask(mask))


def dropout(x: NkiTensor, rate: Any, dtype: Any = None, mask: Any = None) -> NkiTensor:
    dst = _allocate(x.shape, dtype if dtype is not None else x.dtype, _SBUF)
    _rng.dropout(dst, x, rate, mask=_mask(mask))
    return _mark(dst, _mask(mask))


# ---- SPMD and debugging ----

def program_id(axis: int = 0) -> int:
    run = _ctx.current()
    if not run.program_ids:
        return 0
    if not 0 <= int(axis) < len(run.program_ids):
        raise fail(ERR_INVALID_ARG, f"program_id({axis}) on a grid of {len(run.program_ids)} dims.",
                   f"use an axis in [0, {len(run.program_ids) - 1}].")
    return run.program_ids[int(axis)]


def num_programs(axes: Any = None) -> int:
    run = _ctx.current()
    grid = run.grid or (1,)
    if axes is None:
        return int(np.prod(grid))
    picked = axes if isinstance(axes, (tuple, list)) else (axes,)
    return int(np.prod([grid[int(a)] for a in picked]))


def program_ndim() -> int:
    return len(_ctx.current().grid)


def device_print(prefix: str, x: Any) -> None:
    """Prints while the kernel runs on the simulator (on hardware the values go to the debug log)."""
    run = _ctx.current()
    value = np.array(x.read()) if isinstance(x, NkiTensor) else x
    run.prints.append((prefix, value))
    builtins.print(prefix, value)


# ---- loops (the simulator runs kernels eagerly: every loop kind iterates in program order) ----

# `directives=` (compiler scheduling hints, e.g. `ncc.multi_buffer(2)`) and `unroll=` change how the compiler
# lays the loop out, never what it computes: accepted and not needed here

def affine_range(start: Any, stop: Any = None, step: Any = 1, unroll: Any = None,
                 directives: Any = None) -> Iterable[int]:
    return _Loop(start, stop, step)


def sequential_range(start: Any, stop: Any = None, step: Any = 1, directives: Any = None) -> Iterable[int]:
    return _Loop(start, stop, step)


def static_range(start: Any, stop: Any = None, step: Any = 1, directives: Any = None) -> Iterable[int]:
    return _Loop(start, stop, step)


class _Loop:
    """A loop's iterations, as a `range` offers them. Iterated inside a kernel, it tells the launch which loop
    and iteration its instructions run in: the cost model computes loop-invariant ones once (`core.hoist`)."""

    __slots__ = ("_range",)

    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        self._range = range(int(start)) if stop is None else range(int(start), int(stop), int(step))

    def __iter__(self) -> Iterator[int]:
        run = _ctx.active()
        if run is None or not run.accounting:
            return iter(self._range)
        return _hoist.iterate(run, self._range)

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, i: Any) -> Any:
        return self._range[i]

    def __reversed__(self) -> Iterator[int]:
        return reversed(self._range)

    def __contains__(self, v: Any) -> bool:
        return v in self._range

    def __eq__(self, other: Any) -> bool:
        return self._range == (other._range if isinstance(other, _Loop) else other)

    def __hash__(self) -> int:
        return hash(self._range)

    def __getattr__(self, name: str) -> Any:  # start, stop, step, count, index
        if name.startswith("_"):  # incl. `_range` itself before __init__ (copy, pickle)
            raise AttributeError(name)
        return getattr(self._range, name)

    def __repr__(self) -> str:
        return repr(self._range)


_NOT_LANGUAGE = {"annotations", "builtins", "np", "Any", "Iterable", "Iterator", "NkiTensor", "Mask", "fail"}
__all__ = [n for n in dir() if not n.startswith(("_", "ERR_")) and n not in _NOT_LANGUAGE]
