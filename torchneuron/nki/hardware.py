"""Per-generation NeuronCore numbers (reference §2.8 and §3), and which generation a run targets.

One `Target` per generation; every check and every cost estimate reads its numbers from here so that a new
generation is one entry, not a search through the simulator.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

from .. import _env, targets
from .errors import ERR_INVALID_ARG, fail


@dataclass(frozen=True)
class Target:
    name: str                      # trn1 | trn2 | trn3
    nc_version: str                # gen2 | gen3 | gen4
    pmax: int                      # partitions of SBUF / PSUM
    sbuf_bytes_per_partition: int  # usable by kernels (sbuf_fmax_bytes)
    psum_bytes_per_partition: int
    psum_banks: int
    psum_bank_bytes: int
    gemm_stationary_fmax: int
    gemm_moving_fmax: int          # moving free size (fp32 elements of one PSUM bank on v2/v3)
    tensor_ghz: float
    vector_ghz: float
    scalar_ghz: float
    gpsimd_ghz: float
    vector_elems_per_cycle_16bit: int  # bf16/fp16 throughput of the Vector engine
    vector_elems_per_cycle: int        # every other dtype
    dma_engines: int
    dma_bytes_per_ns_per_engine: float
    hbm_bytes_per_ns: float
    tensor_bf16_tflops: float      # per core, documented
    tensor_fp32_tflops: float

    def __hash__(self) -> int:
        """The fields' hash (what the dataclass would compute), made once: every launch signature hashes it."""
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def dma_bytes_per_ns(self) -> float:
        return self.dma_engines * self.dma_bytes_per_ns_per_engine

    @functools.cached_property  # asked by every cost estimate
    def generation(self) -> int:
        return int(self.nc_version[-1])


TRN1 = Target(
    name="trn1", nc_version="gen2", pmax=128, sbuf_bytes_per_partition=180224,
    psum_bytes_per_partition=16384, psum_banks=8, psum_bank_bytes=2048,
    gemm_stationary_fmax=128, gemm_moving_fmax=512,
    tensor_ghz=2.8, vector_ghz=1.12, scalar_ghz=1.4, gpsimd_ghz=1.4,
    vector_elems_per_cycle_16bit=128, vector_elems_per_cycle=128,
    dma_engines=16, dma_bytes_per_ns_per_engine=17.0, hbm_bytes_per_ns=820.0,
    tensor_bf16_tflops=92.0, tensor_fp32_tflops=23.0,
)
TRN2 = Target(
    name="trn2", nc_version="gen3", pmax=128, sbuf_bytes_per_partition=212984,
    psum_bytes_per_partition=16384, psum_banks=8, psum_bank_bytes=2048,
    gemm_stationary_fmax=128, gemm_moving_fmax=512,
    tensor_ghz=2.4, vector_ghz=0.96, scalar_ghz=1.2, gpsimd_ghz=1.2,
    vector_elems_per_cycle_16bit=512, vector_elems_per_cycle=256,
    dma_engines=16, dma_bytes_per_ns_per_engine=23.0, hbm_bytes_per_ns=2900.0,
    tensor_bf16_tflops=79.0, tensor_fp32_tflops=20.0,
)
TRN3 = Target(
    name="trn3", nc_version="gen4", pmax=128, sbuf_bytes_per_partition=245752,
    psum_bytes_per_partition=16384, psum_banks=8, psum_bank_bytes=2048,
    gemm_stationary_fmax=128, gemm_moving_fmax=512,
    tensor_ghz=2.4, vector_ghz=1.2, scalar_ghz=1.2, gpsimd_ghz=1.2,
    vector_elems_per_cycle_16bit=512, vector_elems_per_cycle=256,
    dma_engines=16, dma_bytes_per_ns_per_engine=33.0, hbm_bytes_per_ns=4900.0,
    tensor_bf16_tflops=79.0, tensor_fp32_tflops=20.0,
)

_BY_NAME = {t.name: t for t in (TRN1, TRN2, TRN3)}
# Both spellings of each generation (trn2 | gen3), from the one target table (torchneuron.targets).
TARGETS: dict[str, Target] = {
    spelling: _BY_NAME[t.name] for t in targets.TARGETS.values() for spelling in (t.name, t.nki_generation)}


def target_named(name: str) -> Target:
    try:
        return _BY_NAME[targets.named(name).name]
    except targets.UnknownTarget:
        raise fail(ERR_INVALID_ARG, f"unknown NeuronCore target {name!r}.",
                   f"use one of {sorted(TARGETS)} in NEURON_PLATFORM_TARGET_OVERRIDE or TORCHNEURON_TARGET.") from None


def current_target() -> Target:
    """NEURON_PLATFORM_TARGET_OVERRIDE (AWS's switch, read per kernel) wins, then the process's target
    (torchneuron.targets: TORCHNEURON_TARGET, or on the nrt runtime the instance's)."""
    override = _env.get(_env.NKI_TARGET).strip()
    return target_named(override) if override else _BY_NAME[targets.current().name]
