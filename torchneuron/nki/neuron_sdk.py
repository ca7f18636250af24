"""NKI kernels on a Trn host (the ``nrt`` runtime): a seam, written against documented interfaces.

Two things live here, both for hardware this machine does not have:

* ``launch``: an eager kernel call with neuron tensors goes to the real ``nki`` package (``nki.jit`` dispatches
  on torch tensors itself, reference §6), never to the simulator. The package comes from the Neuron index;
  torchneuron's import aliases never stand in for it.
* ``custom_call_module``: the StableHLO module a compiled graph uses for an NKI op, one
  ``stablehlo.custom_call @AwsNeuronCustomNativeKernel`` whose ``backend_config`` carries the kernel (the
  launches of the op's body: each kernel's source, grid, API generation and argument bindings, as base64
  JSON). neuronx-cc compiles it into the NEFF (reference §4.4: "NKI kernels as custom calls carrying a
  serialized kernel config").

Status: until the nrt runtime exists (``TORCHNEURON_RUNTIME=nrt`` fails at startup), ``on_trn_host()`` is never
true in a real process; tests reach this code through a contract fake of the ``nki`` package and check the
structure of the emitted MLIR and the neuronx-cc command line.
"""

from __future__ import annotations

import base64
import functools
import importlib
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ERR_INVALID_ARG, fail

CUSTOM_CALL_TARGET = "AwsNeuronCustomNativeKernel"


@functools.cache
def _runtime() -> str:
    from .. import _C  # type: ignore[attr-defined]

    return str(_C._runtime_info()["runtime"])


def on_trn_host() -> bool:
    """Whether neuron tensors live on real NeuronCores (the nrt runtime), where kernels run in hardware."""
    return _runtime() == "nrt"


def real_nki(api: str) -> Any:
    """The Neuron SDK's own package for the kernel's API generation: ``nki`` (current) or ``neuronxcc.nki``."""
    name = "nki" if api == "current" else "neuronxcc.nki"
    try:
        module = importlib.import_module(name)
    except ImportError:
        module = None
    spec = getattr(module, "__spec__", None)
    if module is None or module.__name__.startswith("torchneuron") or (spec and spec.name.startswith("torchneuron")):
        raise fail(ERR_INVALID_ARG, f"on a Trn host NKI kernels run through the Neuron SDK's `{name}` package, "
                   "which is not installed.", "install it from the Neuron package index (pip install nki "
                   "neuronx-cc --extra-index-url <the Neuron package index>).")
    return module


def launch(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], grid: tuple[Any, ...],
           api: str) -> Any:
    """Run ``func`` on the NeuronCore through the real package: ``jit(func)[grid](*args)``."""
    kernel = real_nki(api).jit(func)
    if grid:
        key = tuple(d.size for d in grid)
        kernel = kernel[key if len(key) > 1 else key[0]]
    return kernel(*args, **kwargs)


# ---- the custom call a compiled graph carries ----

_MLIR_TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float8_e4m3fn": "f8E4M3FN",
               "float8_e5m2": "f8E5M2", "int8": "i8", "int16": "i16", "int32": "i32", "uint8": "ui8",
               "uint16": "ui16", "uint32": "ui32", "bool": "i1"}


@dataclass(frozen=True)
class Spec:
    shape: tuple[int, ...]
    dtype: str  # torch dtype name without "torch."

    def mlir(self) -> str:
        elem = _MLIR_TYPES.get(self.dtype)
        if elem is None:
            raise fail(ERR_INVALID_ARG, f"{self.dtype} has no NeuronCore type.",
                       "use a float32/bf16/fp16/fp8/int type.")
        return f"tensor<{'x'.join(str(s) for s in self.shape)}{'x' if self.shape else ''}{elem}>"


def kernel_source(func: Callable[..., Any]) -> dict[str, Any]:
    """What identifies a kernel to the NKI compiler: its module, name and source text."""
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        source = ""
    return {"module": getattr(func, "__module__", ""), "name": getattr(func, "__qualname__", func.__name__),
            "source": source}


def backend_config(op: str, launches: Sequence[dict[str, Any]]) -> str:
    """base64 JSON: the op and the kernel launches of its body, in order."""
    doc = {"format": "torchneuron-nki-op/1", "op": op, "launches": list(launches)}
    return base64.b64encode(json.dumps(doc, sort_keys=True).encode()).decode()


def decode_backend_config(text: str) -> dict[str, Any]:
    return json.loads(base64.b64decode(text))


def custom_call_module(op: str, inputs: Sequence[Spec], outputs: Sequence[Spec], config: str) -> str:
    """A StableHLO module ``@main(inputs) -> outputs`` that is one custom call to the kernel."""
    args = ", ".join(f"%arg{i}: {s.mlir()}" for i, s in enumerate(inputs))
    operands = ", ".join(f"%arg{i}" for i in range(len(inputs)))
    in_types = ", ".join(s.mlir() for s in inputs)
    out_types = ", ".join(s.mlir() for s in outputs)
    results = f"({out_types})" if len(outputs) != 1 else out_types
    lhs = "%0" if len(outputs) == 1 else f"%0:{len(outputs)}"
    returned = "%0" if len(outputs) == 1 else ", ".join(f"%0#{i}" for i in range(len(outputs)))
    name = "".join(c if c.isalnum() else "_" for c in op)
    return (f"module @nki_{name} {{\n"
            f"  func.func @main({args}) -> {results} {{\n"
            f"    {lhs} = stablehlo.custom_call @{CUSTOM_CALL_TARGET}({operands}) {{backend_config = \"{config}\", "
            f"api_version = 2 : i32, has_side_effect = false}} : ({in_types}) -> {results}\n"
            f"    return {returned} : {out_types}\n"
            f"  }}\n}}\n")
