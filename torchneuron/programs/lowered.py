"""User API: ``torchneuron.lower(fn_or_module, *example_inputs) -> Lowered``.

A ``Lowered`` is the hardware contract for one function at one set of input shapes: StableHLO text whose
arguments are (module parameters and buffers, the user's tensor inputs, lifted constants), plus what is
needed to call it like the original function. Lowering runs anywhere (no Trn host); ``.compile("trn2")``
needs neuronx-cc, ``.compile("sim")`` (what calling does) runs the same module on XLA:CPU.

    lowered = torchneuron.lower(model, torch.randn(8, 16))
    print(lowered.stablehlo)
    lowered.save("artifact/")                     # module.mlir + lowered.json + tensors.pt
    again = torchneuron.load_lowered("artifact/")
    y = again(x.to("neuron"))                       # runs on the neuron device (sim: XLA:CPU)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..lowering.fx_to_stablehlo import TensorSpec
from ..lowering.passes import OutputLayout
from . import host_bridge as dev

_FORMAT = 1


def lower(fn_or_module: Any, *example_inputs: Any, **example_kwargs: Any) -> Lowered:
    """Trace ``fn_or_module`` on the example inputs (shapes and dtypes only; values are not read) and lower
    it to StableHLO. Module parameters and buffers become arguments, read from the module at call time."""
    from ..lowering.trace import trace

    if not callable(fn_or_module):
        raise TypeError(f"torchneuron.lower expects a function or nn.Module, got {type(fn_or_module).__name__}")
    tg = trace(fn_or_module, example_inputs, example_kwargs)
    params: list[torch.Tensor] | torch.nn.Module = []
    if tg.param_names:
        params = fn_or_module  # read by name at call time: Module.to() may replace the Parameter objects
    return Lowered(
        stablehlo=tg.stablehlo, inputs=tg.inputs, param_names=tg.param_names, params=params,
        constants=tg.constants, in_spec=tg.user_in_spec, tensor_slots=tg.user_tensor_slots, static=tg.user_static,
        mutated=tg.mutated_inputs, out_spec=tg.out_layout.spec, out_slots=tg.out_layout.slots,
        mutation_slots=getattr(tg.out_layout, "mutation_slots", []),
        name=getattr(fn_or_module, "__name__", type(fn_or_module).__name__))


class Lowered:
    def __init__(self, *, stablehlo: str, inputs: list[TensorSpec], param_names: list[str],
                 params: list[torch.Tensor] | torch.nn.Module,
                 constants: list[torch.Tensor], in_spec: pytree.TreeSpec, tensor_slots: list[int], static: list[Any],
                 mutated: list[int], out_spec: pytree.TreeSpec, out_slots: list[Any], mutation_slots: list[Any],
                 name: str = "main"):
        self.stablehlo = stablehlo
        self.inputs = inputs
        self.param_names = param_names
        self._params = params
        self._constants = constants
        self._in_spec = in_spec
        self._tensor_slots = tensor_slots
        self._static = static
        self._mutated = mutated
        self._layout = OutputLayout(out_spec, out_slots)
        self._mutation_slots = mutation_slots
        self.name = name
        self._on_device: dict[torch.device, list[torch.Tensor]] = {}  # constants per device
        self._params_by_device: dict[torch.device, list[torch.Tensor]] = {}  # owned parameters per device
        self._compiled: dict[tuple, Compiled] = {}

    def __repr__(self) -> str:
        ins = ", ".join(str(s) for s in self.inputs[len(self.param_names):len(self.inputs) - len(self._constants)])
        return (f"Lowered({self.name}({ins}), {len(self.param_names)} parameters, "
                f"{len(self.stablehlo)} chars of StableHLO)")

    # -- compile / call -------------------------------------------------------------------------------------
    def compile(self, target: str = "sim", *, lnc: int | None = None, opt_level: int | None = None) -> Compiled:
        """Compile for ``"sim"`` (XLA:CPU) or ``"trn1" | "trn2" | "trn3"`` (neuronx-cc, cached)."""
        from ..compiler import driver

        k = (target, lnc, opt_level)
        c = self._compiled.get(k)
        if c is None:
            exe = driver.compile(self.stablehlo, target=target, lnc=lnc, opt_level=opt_level, kind="graph")
            c = self._compiled[k] = Compiled(self, exe, target)
        return c

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.compile("sim")(*args, **kwargs)

    def _arguments(self, args: tuple, kwargs: dict) -> tuple[list[torch.Tensor], torch.device]:
        leaves, spec = pytree.tree_flatten((args, kwargs))
        if spec != self._in_spec:
            raise TypeError(f"{self.name} was lowered for inputs structured as {self._in_spec}, got {spec}; "
                            "call it like the example inputs given to torchneuron.lower")
        user = []
        for i, v in enumerate(leaves):
            if isinstance(v, torch.Tensor):
                user.append(v)
            elif v != self._static[i]:
                raise ValueError(f"{self.name}: non-tensor argument {i} was {self._static[i]!r} when lowered and is "
                                 f"baked into the program; got {v!r}. Lower again with the new value.")
        devices = {t.device for t in user}
        if len(devices) > 1:
            raise RuntimeError(f"{self.name}: inputs are on several devices ({', '.join(map(str, devices))}); "
                               "move them all to one neuron device (or all to cpu)")
        params = self._current_params()
        device = devices.pop() if devices else (params[0].device if params else torch.device("cpu"))
        if not isinstance(self._params, torch.nn.Module):
            params = self._params_on(device)  # owned (a loaded artifact): they follow the inputs
        for name, p in zip(self.param_names, params):
            if p.device != device:
                raise RuntimeError(f"{self.name}: parameter {name!r} is on {p.device} but the inputs are on {device}; "
                                   f"move the module with .to({str(device)!r})")
        constants = self._on_device.get(device)
        if constants is None:
            constants = self._on_device[device] = [c.to(device) for c in self._constants]
        flat = params + user + constants
        for i, (t, spec) in enumerate(zip(flat, self.inputs)):
            if tuple(t.shape) != spec.shape or t.dtype != spec.dtype:
                what = (f"parameter {self.param_names[i]!r}" if i < len(params)
                        else f"input {i - len(params)}")
                raise ValueError(
                    f"{self.name}: {what} on {device} is {TensorSpec.of(t)} but the program was lowered for {spec}. "
                    "StableHLO for Neuron is static-shape: call torchneuron.lower again with an example of this "
                    "shape (one Lowered per shape; pad or bucket to limit how many).")
        return flat, device

    def _params_on(self, device: torch.device) -> list[torch.Tensor]:
        """The owned parameters on ``device``, copied there once per device (like the constants)."""
        cached = self._params_by_device.get(device)
        if cached is None:
            assert not isinstance(self._params, torch.nn.Module)
            cached = self._params_by_device[device] = [p.detach().to(device) for p in self._params]
        return cached

    def to(self, device: str | torch.device) -> Lowered:
        """Places the parameters on ``device`` (as ``Module.to``) and returns ``self``. An artifact from
        ``load_lowered`` owns its parameters and also moves them by itself to the device of the inputs it
        is called with; a ``Lowered`` of a live module reads them from the module, which this moves."""
        device = torch.device(device)
        if device.type == "neuron" and device.index is None:
            device = torch.device("neuron", torch.neuron.current_device())
        if isinstance(self._params, torch.nn.Module):
            self._params.to(device)
        else:
            self._params = self._params_on(device)
        return self

    def _current_params(self) -> list[torch.Tensor]:
        if isinstance(self._params, torch.nn.Module):
            lookup = dict([*self._params.named_parameters(), *self._params.named_buffers()])
            missing = [n for n in self.param_names if n not in lookup]
            if missing:
                raise RuntimeError(f"{self.name}: the module no longer has {', '.join(missing)}; lower it again")
            return [lookup[n].detach() for n in self.param_names]
        return [p.detach() for p in self._params]

    # -- save / load ----------------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "module.mlir").write_text(self.stablehlo)
        meta = {
            "format": _FORMAT, "name": self.name, "inputs": [s.to_json() for s in self.inputs],
            "param_names": self.param_names, "n_constants": len(self._constants),
            "in_spec": pytree.treespec_dumps(self._in_spec), "tensor_slots": self._tensor_slots,
            "static": [_encode(v) for v in self._static], "mutated": self._mutated,
            "out_spec": pytree.treespec_dumps(self._layout.spec),
            "out_slots": [s if isinstance(s, int) else {"const": _encode(s[1])} for s in self._layout.slots],
            "mutation_slots": [s if isinstance(s, int) else {"const": _encode(s[1])} for s in self._mutation_slots],
        }
        (d / "lowered.json").write_text(json.dumps(meta, indent=1))
        tensors = {f"param:{n}": p.to("cpu") for n, p in zip(self.param_names, self._current_params())}
        tensors.update({f"const:{i}": c.to("cpu") for i, c in enumerate(self._constants)})
        torch.save(tensors, d / "tensors.pt")
        return d


class Compiled:
    """A ``Lowered`` compiled for one target. Calling it runs it (sim: XLA:CPU on the device buffers)."""

    def __init__(self, lowered: Lowered, executable: Any, target: str):
        self.lowered, self.executable, self.target = lowered, executable, target

    @property
    def neff(self) -> bytes:
        neff = getattr(self.executable, "neff", None)
        if neff is None:
            raise AttributeError(f"a {self.target!r} compilation has no NEFF; compile with target='trn2' "
                                 "(or trn1/trn3)")
        return neff

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        lw = self.lowered
        flat, device = lw._arguments(args, kwargs)
        if any(type(t).__name__ in ("FakeTensor", "FunctionalTensor") for t in flat):
            raise TypeError(f"{lw.name}: cannot run a lowered program on fake/functional tensors (they have no "
                            "data); call it with real tensors")
        return lw._layout.rebuild(dev.execute(self.executable, flat, device, lw._mutated))


def load_lowered(directory: str | Path) -> Lowered:
    """Load an artifact written by ``Lowered.save``. Parameters are loaded on the CPU; calling with neuron
    inputs moves them to that device once (or place them with ``.to(device)``)."""
    d = Path(directory)
    try:
        meta = json.loads((d / "lowered.json").read_text())
        text = (d / "module.mlir").read_text()
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{d} is not a saved Lowered artifact (missing {Path(e.filename).name}); "
                                "write one with Lowered.save(dir)") from None
    if meta.get("format") != _FORMAT:
        raise ValueError(f"{d}: artifact format {meta.get('format')} is not supported (expected {_FORMAT})")
    tensors = torch.load(d / "tensors.pt", weights_only=True)
    params = [tensors[f"param:{n}"] for n in meta["param_names"]]
    lw = Lowered(
        stablehlo=text, inputs=[TensorSpec.from_json(s) for s in meta["inputs"]], param_names=meta["param_names"],
        params=params, constants=[tensors[f"const:{i}"] for i in range(meta["n_constants"])],
        in_spec=pytree.treespec_loads(meta["in_spec"]), tensor_slots=meta["tensor_slots"],
        static=[_decode(v) for v in meta["static"]], mutated=meta["mutated"],
        out_spec=pytree.treespec_loads(meta["out_spec"]),
        out_slots=[s if isinstance(s, int) else ("const", _decode(s["const"])) for s in meta["out_slots"]],
        mutation_slots=[s if isinstance(s, int) else ("const", _decode(s["const"])) for s in meta["mutation_slots"]],
        name=meta["name"])
    return lw


def _encode(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return {"v": v}
    if isinstance(v, torch.dtype):
        return {"dtype": str(v).removeprefix("torch.")}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    raise TypeError(f"cannot save a Lowered whose non-tensor argument/output is a {type(v).__name__} ({v!r}); "
                    "only None, bool, int, float, str, dtype and device are stored")


def _decode(d: dict) -> Any:
    if "v" in d:
        return d["v"]
    if "dtype" in d:
        return getattr(torch, d["dtype"])
    return torch.device(d["device"])
