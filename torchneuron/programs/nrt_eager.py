"""Eager ops on the ``nrt`` runtime (a Trn host): every op a NEFF, or the CPU.

The device layer hands each op here (``_C._set_nrt_executor``). A call is looked up by the single-op
signature (``single_op``: shapes, dtypes, static arguments; scalars become tensors): on a miss the op is
lowered to StableHLO as in strict mode, compiled by neuronx-cc at ``-O1`` for the runtime's target (the
compile cache keeps the NEFF on disk) and loaded once per device. It then runs on the device tensors in
stream order: inputs read in place (strided ones made dense on the device first, ``nrt_layout``), outputs
preallocated by the caching allocator, results cast to the dtypes PyTorch gives and written into in-place /
``out=`` arguments.

``NotImplemented`` sends the op back to the device layer, which runs it on the CPU (read the storages,
CPU kernel, write back; random ops draw from the neuron generator): views and factories (no computation),
random ops, empty tensors, mixed devices (the device layer raises PyTorch's error), and ops with no lowering,
which are reported by ``torchneuron.fallback_ops()`` (``TORCHNEURON_FALLBACK=error`` refuses them).
"""

from __future__ import annotations

from typing import Any

import torch

from ..lowering.errors import Unsupported, UnsupportedKind
from . import nrt_layout
from .single_op import OpProgram, OverloadFacts, ProgramCache
from .strict_eager import hand_back

_Tensor = torch.Tensor


def _signature_text(info: OverloadFacts, dyn: list[Any]) -> str:
    parts = [f"{str(v.dtype).removeprefix('torch.')}{list(v.shape)}" if isinstance(v, _Tensor) else type(v).__name__
             for v in dyn]
    return f"{info.name}({', '.join(parts)})"


class NrtOpProgram(OpProgram):
    """A single-op program compiled to a NEFF for the runtime's target and run by libnrt."""

    def _compile(self) -> None:
        from .. import targets
        from ..compiler import driver

        try:
            self.exe = driver.compile(self.stablehlo, target=targets.current().name, kind="eager")
        except driver.CompileError as e:
            raise Unsupported(self.info.name, UnsupportedKind.NOT_COMPILABLE, str(e)) from None
        self._device_constants: dict[torch.device, list[_Tensor]] = {}
        self._device_scalars: dict[tuple, _Tensor] = {}

    @property
    def has_empty_output(self) -> bool:
        return any(t.numel == 0 for t in self.exe.signature.outputs)

    def _scalar(self, v: Any, dt: torch.dtype, device: torch.device) -> _Tensor:
        k = (type(v), v, dt, device)
        t = self._device_scalars.get(k)
        if t is None:
            t = torch.tensor(v, dtype=dt).to(device)
            if len(self._device_scalars) < 256:
                self._device_scalars[k] = t
        return t

    def _input(self, v: _Tensor, dt: torch.dtype | None, device: torch.device) -> _Tensor:
        if v.is_cpu:  # a 0-dim host scalar riding along with device tensors
            return (v.to(dt) if dt is not None else v).contiguous().to(device)
        if dt is not None:
            v = v.to(dt)
        return nrt_layout.dense(v)

    def __call__(self, info: OverloadFacts, values: list[Any], dyn: list[Any]) -> Any:
        device = next(v.device for v in dyn if isinstance(v, _Tensor) and not v.is_cpu)
        ins = [self._input(v, dt, device) if kind == "t" else self._scalar(v, dt, device)
               for (kind, dt), v in zip(self.kinds, dyn)]
        consts = self._device_constants.get(device)
        if consts is None:
            consts = self._device_constants[device] = [c.to(device) for c in self.constants]
        self.exe.what = _signature_text(info, dyn)
        outs = self.exe.execute(ins + consts, device)
        for i, dt in self._cast_slots:
            outs[i] = outs[i].to(dt)
        if self._to_python:
            return outs[0].item()
        n_user = self.n_user
        for j, idx in enumerate(self.mutated):
            dyn[idx].copy_(outs[n_user + j])
        return self._returned(info, values, self._rebuild(outs[:n_user]))


_CACHE = ProgramCache(program_class=NrtOpProgram)


def program_cache() -> ProgramCache:
    return _CACHE


def _runs_here(dyn: list[Any]) -> bool:
    """One neuron device, no empty tensors, host tensors only as 0-dim scalars: else the device layer decides
    (PyTorch's device error, or the CPU for empty tensors)."""
    device = None
    for v in dyn:
        if not isinstance(v, _Tensor):
            continue
        if v.numel() == 0:
            return False
        if v.is_cpu:
            if v.dim() > 0:
                return False
            continue
        if device is not None and v.device != device:
            return False
        device = v.device
    return device is not None


def execute(op: Any, args: tuple, kwargs: dict) -> Any:
    prog, info, values, dyn = _CACHE.lookup(op, args, kwargs)
    if isinstance(prog, Unsupported):
        return hand_back(prog, info.name, args, kwargs)
    if not _runs_here(dyn) or prog.has_empty_output:
        return NotImplemented
    return prog(info, values, dyn)
