"""The engines' PRNGs and the instructions that draw from or expose them: `rand`, `rng`, `dropout`,
`rand_get_state`, `rand_set_state`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost, dtypes
from ..core import context
from ..core.buffers import PSUM, SBUF
from ..core.tensor import NkiTensor
from ..errors import ERR_INVALID_ARG, ERR_SHAPE, fail
from .common import (
    charge,
    check_buffer,
    check_dtype,
    check_on_chip,
    check_partitions,
    need_generation,
    read,
    read_raw,
    write,
)
from .matmul import engine_name


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


RNG_STATE_WORDS = {"gpsimd": 6, "vector": 24}  # uint32 XORWOW state words per lane


def _rng_engine(api: str, t: NkiTensor, engine: Any) -> str:
    """NeuronCore-v3: GpSimd only; v4+: GpSimd or Vector (`unknown` picks by the state width)."""
    gen = context.current().target.generation
    need_generation(api, 3)
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
    check_buffer(t, api, arg, (SBUF,) if eng == "gpsimd" else buffers)
    check_partitions(t, api, arg)
    check_dtype(api, arg, t, (dtypes.uint32,))
    words = RNG_STATE_WORDS[eng]
    if t.ndim != 2 or t.shape[1] != words:
        raise fail(ERR_SHAPE, f"'{api}': `{t.name}` is {t.shape}; the {eng} PRNG state is {words} uint32 words per "
                   "lane, a 2-D (lanes, words) tile.", f"use a (P, {words}) uint32 tile.")


def rand_get_state(dst: NkiTensor, engine: Any = None, api: str = "rand_get_state") -> None:
    """dst[p, :] = the PRNG state of the engine's lane p."""
    eng = _rng_engine(api, dst, engine)
    _check_rng_tile(api, "dst", dst, eng, (SBUF, PSUM) if context.current().target.generation >= 4 else (SBUF,))
    dst.write(rng_state(eng).get_state(RNG_STATE_WORDS[eng])[: dst.partitions].reshape(dst.shape))
    charge(eng, dst, [])


def rand_set_state(src_seeds: NkiTensor, engine: Any = None, api: str = "rand_set_state") -> None:
    """Lane p of the engine's PRNG takes the state src_seeds[p, :]; later random instructions on that engine
    continue from it."""
    eng = _rng_engine(api, src_seeds, engine)
    _check_rng_tile(api, "src_seeds", src_seeds, eng, (SBUF,))
    state = np.asarray(read_raw(src_seeds), dtype=np.uint32).reshape(src_seeds.partitions, -1)
    rng_state(eng).set_state(state, RNG_STATE_WORDS[eng])
    context.current().issue(eng, cost.gpsimd_cycles(src_seeds.free_size) if eng == "gpsimd"
                            else max(cost.MIN_II, src_seeds.free_size), (src_seeds,), (), cost.SBUF_ACCESS_CYCLES)
