"""GpSimd and Vector special instructions: iota, affine/range selects, predicated copies, scans, top-8
helpers, partition shuffles, gathers and the PRNG."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import alu, context
from ..core.indexing import IndexArray
from ..core.tensor import NkiTensor
from ..errors import ERR_INVALID_ARG, ERR_SHAPE, fail
from .common import check_on_chip, check_partitions, output_mask, read, read_raw, write


def charge(engine: str, dst: NkiTensor, inputs: list[Any], cycles: float | None = None) -> None:
    """Record one instruction writing `dst`; by default `150 + N` on GpSimd, `max(MIN_II, N)` elsewhere."""
    run = context.current()
    n = dst.free_size
    if cycles is None:
        cycles = cost.gpsimd_cycles(n) if engine == "gpsimd" else max(cost.MIN_II, n)
    run.issue(engine, cycles, inputs, (dst,), cost.SBUF_ACCESS_CYCLES)


def pattern_values(shape: tuple[int, ...], pattern: Any, offset: int, channel_multiplier: int) -> np.ndarray:
    """offset + c*channel_multiplier + sum(step*idx) over the free pattern [[step, num], ...] (int32 math)."""
    pairs = [(int(s), int(n)) for s, n in pattern]
    p = shape[0]
    vals = np.full((p,) + tuple(n for _, n in pairs), offset, dtype=np.int64)
    vals += (np.arange(p, dtype=np.int64) * channel_multiplier).reshape((p,) + (1,) * len(pairs))
    for k, (step, n) in enumerate(pairs):
        sh = [1] * (len(pairs) + 1)
        sh[k + 1] = n
        vals += (np.arange(n, dtype=np.int64) * step).reshape(sh)
    if vals.size != int(np.prod(shape)):
        raise fail(ERR_SHAPE, f"pattern {pairs} gives {vals.size // max(p, 1)} elements per partition, the "
                   f"destination has {int(np.prod(shape[1:]))}.", "make the pattern counts match the tile.")
    return vals.reshape(shape).astype(np.int32)


def iota(dst: NkiTensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0, api: str = "iota",
         mask: np.ndarray | None = None) -> None:
    check_on_chip(dst, api, "dst")
    check_partitions(dst, api, "dst")
    if isinstance(pattern, (IndexArray, int, np.integer)):
        vals = np.broadcast_to(np.asarray(pattern.values if isinstance(pattern, IndexArray) else pattern), dst.shape)
    else:
        vals = pattern_values(dst.shape, pattern, int(offset), int(channel_multiplier))
    dst.write(dtypes.cast(vals.astype(np.int64) if dtypes.is_int(dst.dtype) else vals.astype(np.float32), dst.dtype),
              output_mask(api, mask, dst.shape))
    charge("gpsimd", dst, [])


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


def nc_stream_shuffle(dst: NkiTensor, src: NkiTensor, shuffle_mask: Any, api: str = "nc_stream_shuffle",
                      mask: np.ndarray | None = None) -> None:
    """Within each 32-partition quadrant, dst partition i takes src partition shuffle_mask[i] (255: keep)."""
    m = list(shuffle_mask)
    if len(m) != 32:
        raise fail(ERR_INVALID_ARG, f"'{api}' needs a 32-entry shuffle_mask, got {len(m)}.",
                   "give one entry per partition of a quadrant.")
    x = read_raw(src).reshape(src.partitions, -1)
    out = dst.read().reshape(dst.partitions, -1).copy()
    lanes = np.arange(dst.partitions)
    picks = np.asarray(m, dtype=np.int64)[lanes % 32]
    sources = (lanes // 32) * 32 + picks
    moved = (picks != 255) & (sources < x.shape[0])
    rows = x[sources[moved]]
    out[moved] = rows if x.dtype == out.dtype else dtypes.cast(dtypes.to_compute(rows), dst.dtype)
    dst.write(out.reshape(dst.shape), output_mask(api, mask, dst.shape))
    charge("vector", dst, [src])


class _Rng:
    """One engine's PRNG (the hardware's LFSR/XORWOW bits are not modelled; the distribution is).

    `rand_get_state` / `rand_set_state` see a per-lane uint32 state (6 words per lane on GpSimd, 24 on
    Vector, as documented). The simulator's state is opaque but keeps the documented contract: the state
    determines the stream that follows, so restoring a state read earlier replays the same random numbers,
    and reading right after a set returns what was set. The simulator draws for all lanes from one stream,
    so lanes a partial `rand_set_state` leaves out keep the state they were last given or read."""

    LANES = 128

    def __init__(self, seed: int = 0) -> None:
        self.gen = np.random.default_rng(seed)
        self.full: np.ndarray | None = None   # the state last read or written, all lanes
        self.fresh = False                    # no number drawn since `full` was read or written

    def seed(self, value: Any) -> None:
        self.gen = np.random.default_rng(int(np.asarray(value).reshape(-1)[0]) if not isinstance(value, int) else value)
        self.fresh = False

    def draw(self) -> np.random.Generator:
        """The generator, for an instruction that consumes random numbers (the state moves on)."""
        self.fresh = False
        return self.gen

    def get_state(self, words: int) -> np.ndarray:
        if not self.fresh or self.full is None or self.full.shape[1] != words:
            self._load(self.gen.integers(0, 2**32, size=(self.LANES, words), dtype=np.uint64).astype(np.uint32))
        return self.full  # type: ignore[return-value]

    def set_state(self, state: np.ndarray, words: int) -> None:
        full = self.full.copy() if self.full is not None and self.full.shape[1] == words else \
            np.zeros((self.LANES, words), dtype=np.uint32)
        full[: state.shape[0]] = state
        self._load(full)

    def _load(self, full: np.ndarray) -> None:
        self.full, self.fresh = full, True
        self.gen = np.random.default_rng(np.concatenate([[full.shape[1]], full.reshape(-1)]).astype(np.uint32))


def rng_state(engine: str = "vector") -> _Rng:
    """The PRNG of the Vector (default) or GpSimd engine."""
    run = context.current()
    if run.rng is None:
        run.rng = {"vector": _Rng(0), "gpsimd": _Rng(1)}
    return run.rng["gpsimd" if engine == "gpsimd" else "vector"]


def rand(dst: NkiTensor, low: float = 0.0, high: float = 1.0, api: str = "rand") -> None:
    check_on_chip(dst, api, "dst")
    vals = rng_state().draw().random(dst.shape, dtype=np.float32) * np.float32(high - low) + np.float32(low)
    write(dst, vals, None, api)
    charge("vector", dst, [])


def rng_bits(dst: NkiTensor, api: str = "rng", engine: str = "vector") -> None:
    vals = rng_state(engine).draw().integers(0, 2**31 - 1, size=dst.shape, dtype=np.int64)
    write(dst, vals, None, api)
    charge("gpsimd" if engine == "gpsimd" else "vector", dst, [])


def dropout(dst: NkiTensor, data: Any, prob: Any, api: str = "dropout", mask: np.ndarray | None = None) -> None:
    """Each element is zeroed with probability `prob`: a scalar, or a (P, 1) tile of per-partition rates."""
    if isinstance(prob, NkiTensor):
        p = read(prob).reshape((prob.partitions,) + (1,) * (dst.ndim - 1))
    else:
        p = np.float32(prob)
    x = read(data, mask)
    keep = rng_state().draw().random(x.shape, dtype=np.float32) >= p
    write(dst, np.where(keep, x, np.float32(0)), mask, api)
    charge("vector", dst, [data])


def gather_flattened(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, api: str = "gather_flattened",
                     mask: np.ndarray | None = None) -> None:
    x = read_raw(data).reshape(data.partitions, -1)
    idx = read_raw(indices).astype(np.int64).reshape(indices.partitions, -1)
    if np.any((idx < 0) | (idx >= x.shape[1])):
        from ..core.tensor import oob
        raise oob(data.name, 1, int(idx.min()), int(idx.max()), x.shape[1])
    out = np.take_along_axis(x, idx, axis=1)
    dst.write(out.reshape(dst.shape) if out.dtype == dtypes.storage_dtype(dst.dtype)
              else dtypes.cast(dtypes.to_compute(out), dst.dtype).reshape(dst.shape), mask)
    charge("gpsimd", dst, [data, indices])




# ---- GpSimd gathers/scans documented for NKI 0.2+ (reference §2.6) ----

def _gpsimd_sbuf(api: str, **operands: Any) -> None:
    """GpSimd operands live in SBUF (the engine cannot reach PSUM or HBM)."""
    from ..core.buffers import SBUF
    from .common import check_buffer
    for arg, t in operands.items():
        if isinstance(t, NkiTensor):
            check_buffer(t, api, arg, (SBUF,))
            check_partitions(t, api, arg)


def _need_generation(api: str, generation: int) -> None:
    run = context.current()
    if run.target.generation < generation:
        raise fail(ERR_INVALID_ARG, f"nisa.{api} needs NeuronCore-v{generation} or later; the target is "
                   f"{run.target.name}.", f"set NEURON_PLATFORM_TARGET_OVERRIDE to a NeuronCore-v{generation}+ target.")


def _check_dtype(api: str, arg: str, t: NkiTensor, allowed: tuple[np.dtype, ...]) -> None:
    from ..errors import ERR_DTYPE
    if dtypes.as_dtype(t.dtype) not in allowed:
        want = " or ".join(dtypes.name(d) for d in allowed)
        raise fail(ERR_DTYPE, f"operand '{arg}' of '{api}' is {dtypes.name(t.dtype)}; it must be {want}.",
                   f"give `{t.name}` the dtype {want}.")


GPSIMD_CORE_PARTITIONS = 16  # each of the 8 GpSimd cores serves 16 contiguous partitions


def local_gather_cycles(num_valid: int, num_elem: int, itemsize: int) -> float:
    """`150 + (valid * elem) / C`, C = ((28 + t*elem) / (t*elem)) / min(4/dtype_size, elem), t = 4."""
    t = 4
    c = ((28 + t * num_elem) / (t * num_elem)) / min(4 / itemsize, num_elem)
    return cost.GPSIMD_START_CYCLES + num_valid * num_elem / c


def local_gather(dst: NkiTensor, src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, api: str = "local_gather",
                 mask: np.ndarray | None = None) -> None:
    """Each GpSimd core (16 partitions) flattens its 16-partition slice of `index` partition-first, keeps the
    first `num_valid_indices`, and every partition p of the core gathers `num_elem_per_idx` contiguous
    elements of its own flattened free dims at each index: dst[p, k, e] = src[p, idx_core[k] + e]."""
    _gpsimd_sbuf(api, dst=dst, src_buffer=src_buffer, index=index)
    p = src_buffer.partitions
    if index.partitions != p or p % GPSIMD_CORE_PARTITIONS:
        raise fail(ERR_SHAPE, f"'{api}': src_buffer has {p} partitions and index {index.partitions}; they must be "
                   f"equal and a multiple of {GPSIMD_CORE_PARTITIONS}.",
                   "give src_buffer and index the same partition count, a multiple of 16.")
    _check_dtype(api, "index", index, (dtypes.uint16,))
    elem = int(num_elem_per_idx)
    if elem not in (1, 2, 4, 8, 16, 32):
        raise fail(ERR_INVALID_ARG, f"'{api}': num_elem_per_idx={elem}; it must be one of 1, 2, 4, 8, 16, 32.",
                   "gather 1, 2, 4, 8, 16 or 32 contiguous elements per index.")
    cores = p // GPSIMD_CORE_PARTITIONS
    per_core = index.size // cores
    valid = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < valid <= min(per_core, 4096):
        raise fail(ERR_INVALID_ARG, f"'{api}': num_valid_indices={valid}; each core holds {per_core} indices and "
                   "gathers at most 4096.", f"use 1 <= num_valid_indices <= {min(per_core, 4096)}.")
    if dst.dtype != src_buffer.dtype:
        raise fail(ERR_INVALID_ARG, f"'{api}' does not cast: dst `{dst.name}` is {dtypes.name(dst.dtype)}, "
                   f"src_buffer `{src_buffer.name}` is {dtypes.name(src_buffer.dtype)}.",
                   "give dst the dtype of src_buffer.")
    if dst.partitions != p or dst.free_size != valid * elem:
        raise fail(ERR_SHAPE, f"'{api}' writes {p} partitions x {valid * elem} elements "
                   f"({valid} indices x {elem}); dst `{dst.name}` is {dst.shape}.",
                   "shape dst as (partitions, num_valid_indices * num_elem_per_idx) (free dims may be split).")
    x = read_raw(src_buffer).reshape(p, -1)
    idx = read_raw(index).astype(np.int64).reshape(cores, GPSIMD_CORE_PARTITIONS, -1)
    idx = idx.transpose(0, 2, 1).reshape(cores, -1)[:, :valid]            # partition dim first, per core
    cols = idx[:, :, None] + np.arange(elem, dtype=np.int64)             # (cores, valid, elem)
    if cols.min() < 0 or cols.max() >= x.shape[1]:
        from ..core.tensor import oob
        raise oob(src_buffer.name, 1, int(cols.min()), int(cols.max()), x.shape[1])
    cols = np.repeat(cols, GPSIMD_CORE_PARTITIONS, axis=0).reshape(p, -1)  # each core's 16 partitions share it
    dst.write(np.take_along_axis(x, cols, axis=1).reshape(dst.shape), output_mask(api, mask, dst.shape))
    charge("gpsimd", dst, [src_buffer, index], local_gather_cycles(valid, elem, src_buffer.itemsize))


def nonzero_with_count(dst: NkiTensor, src: NkiTensor, index_offset: Any = 0, padding_val: Any = -1,
                       api: str = "nonzero_with_count") -> None:
    """On partitions 0, 16, ..., 112 (each GpSimd core's first): the indices of the nonzero elements (+
    index_offset), then padding_val, then the count in the extra last slot. Other partitions are untouched."""
    _need_generation(api, 3)
    _gpsimd_sbuf(api, dst=dst, src=src)
    _check_dtype(api, "src", src, (dtypes.float32, dtypes.int32))
    _check_dtype(api, "dst", dst, (dtypes.int32,))
    if dst.partitions != src.partitions or dst.free_size != src.free_size + 1:
        raise fail(ERR_SHAPE, f"'{api}': dst `{dst.name}` {dst.shape} must have the partitions of src `{src.name}` "
                   f"{src.shape} and exactly one more free element (for the count).",
                   "allocate dst as (P, T + 1) int32.")
    for name, v in (("index_offset", index_offset), ("padding_val", padding_val)):
        if isinstance(v, NkiTensor) or not float(v).is_integer():
            raise fail(ERR_INVALID_ARG, f"'{api}': {name}={v!r} must be an int32 scalar.", f"pass an integer {name}.")
    rows = np.arange(0, src.partitions, GPSIMD_CORE_PARTITIONS)
    x = read_raw(src).reshape(src.partitions, -1)[rows]
    nz = x != 0
    count = nz.sum(axis=1)
    t = x.shape[1]
    order = np.argsort(~nz, axis=1, kind="stable")                        # nonzero positions first, in order
    found = np.where(np.arange(t) < count[:, None], order + int(index_offset), int(padding_val))
    out = dst.read().reshape(dst.partitions, -1).copy()
    out[rows] = np.concatenate([found, count[:, None]], axis=1).astype(out.dtype)
    dst.write(out.reshape(dst.shape))
    charge("gpsimd", dst, [src], cost.gpsimd_cycles(src.free_size))


def sequence_bounds(dst: NkiTensor, segment_ids: NkiTensor, api: str = "sequence_bounds",
                    mask: np.ndarray | None = None) -> None:
    """For a (1, n) tile of segment IDs: dst[0, 0, i] = first index of i's run of equal IDs, dst[0, 1, i] = one
    past its last; padding (ID 0) gets start n and end -1."""
    _gpsimd_sbuf(api, dst=dst, segment_ids=segment_ids)
    _check_dtype(api, "segment_ids", segment_ids, (dtypes.float32, dtypes.int32))
    _check_dtype(api, "dst", dst, (dtypes.float32, dtypes.int32))
    if segment_ids.partitions != 1:
        raise fail(ERR_SHAPE, f"'{api}': segment_ids `{segment_ids.name}` has {segment_ids.partitions} partitions; "
                   "the partition dimension must be 1.", "pass the segment IDs as a (1, n) tile.")
    n = segment_ids.free_size
    if dst.partitions != 1 or dst.free_size != 2 * n:
        raise fail(ERR_SHAPE, f"'{api}': dst `{dst.name}` is {dst.shape}; the bounds of {n} segment IDs are "
                   f"(1, 2, {n}).", f"allocate dst as (1, 2, {n}).")
    s = read(segment_ids).reshape(-1)
    pos = np.arange(n, dtype=np.int64)
    new_run = np.ones(n, dtype=np.bool_)
    new_run[1:] = s[1:] != s[:-1]
    end_run = np.ones(n, dtype=np.bool_)
    end_run[:-1] = s[:-1] != s[1:]
    start = np.maximum.accumulate(np.where(new_run, pos, 0))
    end = np.minimum.accumulate(np.where(end_run, pos + 1, n)[::-1])[::-1]
    pad = s == 0
    out = np.stack([np.where(pad, n, start), np.where(pad, -1, end)]).astype(np.float32)
    write(dst, out.reshape(dst.shape), output_mask(api, mask, dst.shape), api)
    charge("gpsimd", dst, [segment_ids], cost.gpsimd_cycles(n))


RNG_STATE_WORDS = {"gpsimd": 6, "vector": 24}  # uint32 XORWOW state words per lane


def _rng_engine(api: str, t: NkiTensor, engine: Any) -> str:
    """NeuronCore-v3: GpSimd only; v4+: GpSimd or Vector (`unknown` picks by the state width)."""
    from .matmul import engine_name
    gen = context.current().target.generation
    _need_generation(api, 3)
    name = str(getattr(engine, "name", engine) or "unknown").removesuffix("_engine")
    if name in ("unknown", "0", "None"):
        name = "vector" if gen >= 4 and t.free_size == RNG_STATE_WORDS["vector"] else "gpsimd"
    else:
        name = engine_name(engine)
    if name not in RNG_STATE_WORDS or (name == "vector" and gen < 4):
        raise fail(ERR_INVALID_ARG, f"'{api}' runs on {'GpSimd' if gen < 4 else 'GpSimd or Vector'} on this "
                   f"target, not {name}.", "use engine=nisa.gpsimd_engine (or nisa.vector_engine on NeuronCore-v4).")
    return name


def _check_rng_tile(api: str, arg: str, t: NkiTensor, eng: str, buffers: tuple[Any, ...]) -> None:
    from ..core.buffers import SBUF
    from .common import check_buffer
    check_buffer(t, api, arg, (SBUF,) if eng == "gpsimd" else buffers)
    check_partitions(t, api, arg)
    _check_dtype(api, arg, t, (dtypes.uint32,))
    words = RNG_STATE_WORDS[eng]
    if t.ndim != 2 or t.shape[1] != words:
        raise fail(ERR_SHAPE, f"'{api}': `{t.name}` is {t.shape}; the {eng} PRNG state is {words} uint32 words per "
                   "lane, a 2-D (lanes, words) tile.", f"use a (P, {words}) uint32 tile.")


def rand_get_state(dst: NkiTensor, engine: Any = None, api: str = "rand_get_state") -> None:
    """dst[p, :] = the PRNG state of the engine's lane p."""
    from ..core.buffers import PSUM, SBUF
    eng = _rng_engine(api, dst, engine)
    _check_rng_tile(api, "dst", dst, eng, (SBUF, PSUM) if context.current().target.generation >= 4 else (SBUF,))
    dst.write(rng_state(eng).get_state(RNG_STATE_WORDS[eng])[: dst.partitions].reshape(dst.shape))
    charge(eng, dst, [])


def rand_set_state(src_seeds: NkiTensor, engine: Any = None, api: str = "rand_set_state") -> None:
    """Lane p of the engine's PRNG takes the state src_seeds[p, :]; later random instructions on that engine
    continue from it."""
    from ..core.buffers import SBUF
    eng = _rng_engine(api, src_seeds, engine)
    _check_rng_tile(api, "src_seeds", src_seeds, eng, (SBUF,))
    state = np.asarray(read_raw(src_seeds), dtype=np.uint32).reshape(src_seeds.partitions, -1)
    rng_state(eng).set_state(state, RNG_STATE_WORDS[eng])
    context.current().issue(eng, cost.gpsimd_cycles(src_seeds.free_size) if eng == "gpsimd"
                            else max(cost.MIN_II, src_seeds.free_size), (src_seeds,), (), cost.SBUF_ACCESS_CYCLES)
