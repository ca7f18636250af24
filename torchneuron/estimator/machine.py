"""What one neuron device (a logical NeuronCore) can do per nanosecond, per engine, for a target.

Derived from the per-generation numbers of ``torchneuron.nki.hardware`` (reference nki.md §3), which are per
physical core, and the logical-core configuration (LNC: physical cores fused into one device, default 2 on
trn2/trn3, ``NEURON_LOGICAL_NC_CONFIG`` overrides) that also decides how the chip's HBM bandwidth is shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..compiler import driver
from ..nki import hardware

# Physical NeuronCores per chip (reference nki.md §3, "Cores / chip").
_CORES_PER_CHIP = {"gen2": 2, "gen3": 8, "gen4": 8}
# Scalar (Activation) engine lanes: 128 elements per cycle on every generation (trn3's 256 for 16-bit types
# is not counted, so estimates stay on the slow side).
_SCALAR_ELEMS_PER_CYCLE = 128
# Minimum initiation interval of an engine instruction, in engine cycles (reference: MIN_II ≈ 64).
MIN_II_CYCLES = 64
# Fixed latency of a DMA between HBM and on-chip memory (reference: ~1300 ns). An eager op pays one to load
# its inputs and one to store its outputs; a compiled graph pays them once.
DMA_LATENCY_NS = 1300.0

_GENERATION = {"trn1": "gen2", "trn2": "gen3", "trn3": "gen4"}
_TENSOR_16BIT = {torch.bfloat16, torch.float16}
_FP8 = {t for t in (getattr(torch, n, None) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                                      "float8_e5m2fnuz")) if t is not None}


@dataclass(frozen=True)
class Machine:
    target: str                 # trn1 | trn2 | trn3
    lnc: int
    tensor_ghz: float
    tensor_bf16_flops_per_ns: float
    tensor_fp32_flops_per_ns: float
    vector_elems_per_ns_16bit: float
    vector_elems_per_ns: float
    scalar_elems_per_ns: float
    hbm_bytes_per_ns: float
    dma_bytes_per_ns: float
    sbuf_bytes: int

    def tensor_flops_per_ns(self, dtype: torch.dtype) -> float:
        """Matmul peak for an operand dtype: bf16/fp16/fp8 at the 16-bit rate (fp8's double rate is not
        counted), everything else (fp32, and fp64 computed in fp32) at the fp32 rate (a quarter)."""
        if dtype in _TENSOR_16BIT or dtype in _FP8:
            return self.tensor_bf16_flops_per_ns
        return self.tensor_fp32_flops_per_ns

    @property
    def stream_bytes_per_ns(self) -> float:
        """HBM <-> SBUF traffic passes through the device's DMA queues: the slower of its share of the chip's
        HBM bandwidth and its queues' streaming rate (trn1: 272 GB/s of queues against a 410 GB/s share)."""
        return min(self.hbm_bytes_per_ns, self.dma_bytes_per_ns)

    @property
    def devices_per_chip(self) -> int:
        return max(1, _CORES_PER_CHIP[_GENERATION[self.target]] // self.lnc)

    def vector_rate(self, dtype: torch.dtype) -> float:
        return self.vector_elems_per_ns_16bit if dtype.itemsize == 2 else self.vector_elems_per_ns

    @property
    def peak_flops_per_ns(self) -> float:
        return self.tensor_bf16_flops_per_ns


def machine(target: str | None = None) -> Machine:
    """The device model of ``target`` (default: the configured target, ``TORCHNEURON_TARGET``)."""
    t = hardware.target_named(target) if target else hardware.current_target()
    lnc = driver._lnc(t.name, None)
    devices_per_chip = max(1, _CORES_PER_CHIP[t.nc_version] // lnc)
    return Machine(
        target=t.name,
        lnc=lnc,
        tensor_ghz=t.tensor_ghz,
        tensor_bf16_flops_per_ns=t.tensor_bf16_tflops * 1e3 * lnc,
        tensor_fp32_flops_per_ns=t.tensor_fp32_tflops * 1e3 * lnc,
        vector_elems_per_ns_16bit=t.vector_ghz * t.vector_elems_per_cycle_16bit * lnc,
        vector_elems_per_ns=t.vector_ghz * t.vector_elems_per_cycle * lnc,
        scalar_elems_per_ns=t.scalar_ghz * _SCALAR_ELEMS_PER_CYCLE * lnc,
        hbm_bytes_per_ns=t.hbm_bytes_per_ns / devices_per_chip,
        dma_bytes_per_ns=t.dma_bytes_per_ns * lnc,
        sbuf_bytes=t.pmax * t.sbuf_bytes_per_partition * lnc,
    )
