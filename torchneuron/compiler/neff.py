"""A NEFF and how it runs on the ``nrt`` runtime: loaded once per device, executed on neuron tensors with its
outputs preallocated by the caching allocator.

The StableHLO signature it was compiled from gives each output's shape and dtype (``stablehlo_signature``);
libnrt checks the byte sizes against the NEFF's own tensor table on every execution.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .stablehlo_signature import Signature, TensorType

NAME = "neuronx-cc"

_DTYPES = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64, "i1": torch.bool,
    "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "ui8": torch.uint8,
    "ui16": torch.uint16, "ui32": torch.uint32, "ui64": torch.uint64, "f8E4M3FN": torch.float8_e4m3fn,
    "f8E5M2": torch.float8_e5m2, "complex<f32>": torch.complex64, "complex<f64>": torch.complex128,
}


def torch_dtype(element: str) -> torch.dtype:
    return _DTYPES[element]


def _c():
    from .. import _C  # type: ignore[attr-defined]

    return _C


def on_nrt() -> bool:
    """True when this process's neuron device is the nrt runtime (a Trn host, or the contract fake)."""
    return _c()._runtime_info()["runtime"] == "nrt"


class NeffExecutable:
    """A NEFF for one target. ``execute`` runs it on neuron tensors (nrt runtime); ``run`` on CPU tensors."""

    backend = NAME

    def __init__(self, neff: bytes, target: str, lnc: int, signature: Signature | None = None, what: str = "a NEFF"):
        self.neff, self.target, self.lnc = neff, target, lnc
        self.signature = signature
        self.what = what  # names the program in errors ("aten::add.Tensor(float32[4, 3], ...)")
        self._models: dict[int, int] = {}  # device index -> libnrt model handle

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(self.neff)
        return path

    def _model(self, device: int) -> int:
        handle = self._models.get(device)
        if handle is None:
            handle = self._models[device] = _c()._nrt_load_model(self.neff, device)
        return handle

    def _allocate(self, t: TensorType, device: torch.device) -> torch.Tensor:
        return torch.empty(t.shape, dtype=torch_dtype(t.element), device=device)

    def execute(self, inputs: list[torch.Tensor], device: torch.device,
                outputs: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
        """Run on contiguous neuron tensors of ``device`` (in the NEFF's argument order). The outputs are
        ``outputs`` when given (contiguous, the NEFF's shapes and dtypes), else fresh device tensors."""
        if self.signature is None:
            raise RuntimeError(f"{self.what}: this NEFF has no StableHLO signature; compile it through "
                               "torchneuron.compiler.driver")
        index = device.index if device.index is not None else torch.neuron.current_device()
        if outputs is None:
            outputs = [self._allocate(t, device) for t in self.signature.outputs]
        _c()._nrt_execute(self._model(index), inputs, outputs, self.what)
        return outputs

    def run(self, host_tensors) -> list[torch.Tensor]:
        """CPU tensors in, CPU tensors out: through the current neuron device (nrt runtime only)."""
        if not on_nrt():
            raise RuntimeError(
                f"this NEFF was compiled for {self.target} (lnc={self.lnc}) and runs only on a Trn host with the "
                "nrt runtime (TORCHNEURON_RUNTIME=nrt); on this machine compile with target='sim' to run the "
                "same StableHLO on XLA:CPU")
        device = torch.device("neuron", torch.neuron.current_device())
        ins = [t.to(device).contiguous() for t in host_tensors]
        return [o.cpu() for o in self.execute(ins, device)]

    def __del__(self):
        try:
            for handle in self._models.values():
                _c()._nrt_unload_model(handle)
        except Exception:  # noqa: BLE001, S110 - at interpreter exit the runtime may be gone
            pass

    def __repr__(self) -> str:
        return f"NeffExecutable(target={self.target}, lnc={self.lnc}, {len(self.neff)} bytes)"
