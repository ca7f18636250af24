"""neuronx-cc's auto-cast, with one meaning everywhere: the compile option of ``backend="neuron"``, the flags
passed to neuronx-cc on a Trn host, the simulator's numerics (this FX pass) and ``torchneuron.estimate``.

neuronx-cc semantics (``neuronx-cc compile --auto-cast <mode> --auto-cast-type <type>``):

* ``none``    leave every dtype as the model has it (torchneuron's default, as AWS's own backend passes: compiled
              numerics equal eager numerics);
* ``matmult`` cast the FP32 operands of operations on the matrix-multiplication (Tensor) engine — matmuls,
              convolutions, attention's products — to the cast type; they accumulate in FP32 (PSUM) and their
              results stay FP32 (neuronx-cc's own default, and the setting of AWS's published benchmarks);
* ``all``     cast every FP32 operation: its FP32 inputs are rounded to the cast type (and so is each
              result, since it is the next operation's input).

Cast types: ``bf16`` (default), ``fp16``, ``tf32`` (FP32 range, 10 mantissa bits), ``fp8_e4m3``. The Tensor
engine of every target takes all four (reference nki.md §2.6: nc_matmul operands fp8_e4m3/bf16/fp16/tf32).

The simulator emulates the setting by rounding: each selected FP32 operand becomes ``round(x)`` computed in
FP32 (a cast to the type and back; tf32 by Veltkamp splitting, which XLA keeps as written), so every executor
(XLA:CPU, ATen, Inductor) computes with exactly the operand values the hardware would, accumulating in FP32.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.fx as fx

MODES = ("none", "matmult", "all")
CAST_TYPES = ("bf16", "fp16", "tf32", "fp8_e4m3")
_ALIASES = {"matmul": "matmult", "bfloat16": "bf16", "float16": "fp16", "fp8": "fp8_e4m3", "float8_e4m3": "fp8_e4m3"}
# The dtype a cast type stores in (tf32 rounds in fp32: no torch dtype holds it).
_STORAGE = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp8_e4m3": torch.float8_e4m3fn}
_TF32_SPLIT = float(2 ** (24 - 11) + 1)  # Veltkamp constant: keep 11 of fp32's 24 significant bits

aten = torch.ops.aten
# Tensor-engine ops and the positions of their matrix operands (a bias is added in FP32, not multiplied).
_MATMUL_OPERANDS: dict[object, tuple[int, ...]] = {
    aten.mm.default: (0, 1), aten.bmm.default: (0, 1), aten.matmul.default: (0, 1),
    aten.addmm.default: (1, 2), aten.baddbmm.default: (1, 2), aten.addbmm.default: (1, 2),
    aten.linear.default: (0, 1), aten.convolution.default: (0, 1), aten._convolution.default: (0, 1),
    aten.convolution_backward.default: (0, 1, 2),
    aten._scaled_dot_product_flash_attention_for_cpu.default: (0, 1, 2),
    aten._scaled_dot_product_efficient_attention.default: (0, 1, 2),
    aten.scaled_dot_product_attention.default: (0, 1, 2),
}


@dataclass(frozen=True)
class AutoCast:
    mode: str = "none"
    cast_type: str = "bf16"

    def __str__(self) -> str:
        return "none" if self.mode == "none" else f"{self.mode}-{self.cast_type}"

    @property
    def enabled(self) -> bool:
        return self.mode != "none"

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the cast operands are stored in on chip (tf32: fp32 storage, 10-bit mantissa)."""
        return _STORAGE[self.cast_type]

    def flags(self) -> tuple[str, ...]:
        """The neuronx-cc command-line flags of this setting."""
        if not self.enabled:
            return ("--auto-cast=none",)
        return (f"--auto-cast={self.mode}", f"--auto-cast-type={self.cast_type}")

    def casts(self, dtype: torch.dtype, on_tensor_engine: bool) -> bool:
        """Whether an operand of ``dtype`` is cast: FP32 only (as neuronx-cc; fp64 is computed in fp32 too)."""
        if dtype not in (torch.float32, torch.float64):
            return False
        return self.mode == "all" or (self.mode == "matmult" and on_tensor_engine)


NONE = AutoCast()
_current = NONE


def parse(value: object) -> AutoCast:
    """``"none"``, ``"matmult"``, ``"all"``, ``"matmult-bf16"`` / ``"all:fp16"``, a ``(mode, type)`` pair or an
    ``AutoCast``; ``None`` means the current setting."""
    if value is None:
        return _current
    if isinstance(value, AutoCast):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        mode, cast_type = (str(v).lower() for v in value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(":", "-")
        mode, _, cast_type = text.partition("-")
        cast_type = cast_type or "bf16"
    else:
        raise TypeError(f"auto_cast must be a string like 'matmult' or 'matmult-bf16', got {type(value).__name__}")
    mode, cast_type = _ALIASES.get(mode, mode), _ALIASES.get(cast_type, cast_type)
    if mode not in MODES:
        raise ValueError(f"auto_cast mode {mode!r} is not one of {', '.join(MODES)} (neuronx-cc --auto-cast)")
    if cast_type not in CAST_TYPES:
        raise ValueError(f"auto_cast type {cast_type!r} is not one of {', '.join(CAST_TYPES)} "
                         "(neuronx-cc --auto-cast-type)")
    return AutoCast(mode, cast_type)


def current() -> AutoCast:
    """The setting ``torch.compile(backend="neuron")`` compiles with (``compile_options(auto_cast=...)``)."""
    return _current


def set_current(value: object) -> AutoCast:
    """Set the compile setting; returns the previous one."""
    global _current
    previous, _current = _current, parse(value)
    return previous


@contextlib.contextmanager
def restored(previous: AutoCast) -> Iterator[None]:
    """Put ``previous`` back on exit (``compile_options`` as a context manager)."""
    try:
        yield
    finally:
        set_current(previous)


def round_to(x: torch.Tensor, setting: AutoCast | str) -> torch.Tensor:
    """``x`` rounded to the cast type, in ``x``'s dtype: the operand values the hardware multiplies."""
    setting = parse(setting)
    if setting.cast_type == "tf32":
        c = x * _TF32_SPLIT
        return c - (c - x)
    return x.to(setting.dtype).to(x.dtype)


def _val(node: object):
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def _is_float32(node: object) -> bool:
    v = _val(node)
    return isinstance(v, torch.Tensor) and v.dtype in (torch.float32, torch.float64)


def _selected(node: fx.Node, setting: AutoCast) -> tuple[int, ...]:
    """Positions of ``node``'s arguments whose FP32 values the setting rounds."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return ()
    operands = _MATMUL_OPERANDS.get(node.target)
    if setting.mode == "matmult" or (operands is None and node.target.is_view):
        operands = operands or ()
        return tuple(i for i in operands if i < len(node.args) and _is_float32(node.args[i]))
    # all: every FP32 input of every operation that computes (a view only renames its input's values)
    return tuple(i for i, a in enumerate(node.args) if _is_float32(a))


def _round_node(graph: fx.Graph, x: fx.Node, setting: AutoCast) -> fx.Node:
    val = x.meta["val"]
    if setting.cast_type == "tf32":
        c = graph.call_function(aten.mul.Tensor, (x, _TF32_SPLIT))
        d = graph.call_function(aten.sub.Tensor, (c, x))
        out = graph.call_function(aten.sub.Tensor, (c, d))
        for n in (c, d):
            n.meta["val"] = val
    else:
        low = graph.call_function(aten._to_copy.default, (x,), {"dtype": setting.dtype})
        with _fake_mode_of(val):
            low.meta["val"] = val.to(setting.dtype)
        out = graph.call_function(aten._to_copy.default, (low,), {"dtype": val.dtype})
    out.meta["val"] = val
    return out


def _fake_mode_of(val: torch.Tensor):
    mode = getattr(val, "fake_mode", None)
    return mode if mode is not None else contextlib.nullcontext()


def emulate(gm: fx.GraphModule, setting: object = None) -> fx.GraphModule:
    """Round the operands ``setting`` (default: the current compile setting) casts, in place; returns ``gm``.

    Each FP32 value is rounded once however many selected operations read it. Outputs of ``all`` are rounded
    through their readers; FP32 accumulation is left to the operation itself (as the Tensor engine's PSUM)."""
    setting = parse(setting)
    if not setting.enabled:
        return gm
    graph = gm.graph
    rounded: dict[fx.Node, fx.Node] = {}
    for node in list(graph.nodes):
        positions = _selected(node, setting)
        if not positions:
            continue
        args = list(node.args)
        for i in positions:
            src = args[i]
            if src not in rounded:  # before its first selected reader (never among the placeholders)
                with graph.inserting_before(node):
                    rounded[src] = _round_node(graph, src, setting)
            args[i] = rounded[src]
        node.args = tuple(args)
    graph.lint()
    gm.recompile()
    return gm


__all__ = ["CAST_TYPES", "MODES", "NONE", "AutoCast", "current", "emulate", "parse", "restored", "round_to",
           "set_current"]
