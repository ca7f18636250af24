"""Lowering errors: each names the op, the shapes and what to do about it."""

from __future__ import annotations

import enum
import re


class LoweringError(RuntimeError):
    """An op or graph cannot be lowered to StableHLO."""

    def __init__(self, message: str, op: str | None = None):
        super().__init__(message)
        self.op = op


class DynamicShapeError(LoweringError):
    """The graph has symbolic (dynamic) shapes; StableHLO for Neuron is static-shape."""


class UnsupportedKind(enum.Enum):
    """Why an eager op call has no single-op program. Callers branch on this, never on the message."""

    VIEW = "view"                            # a metadata operation of the runtime, not a computation
    RUNTIME_CHECK = "runtime check"          # reads a result on the host and raises (LAPACK info checks)
    FACTORY = "factory"                      # no tensor inputs: the runtime allocates
    RANDOM = "random"                        # draws from the device generator (no StableHLO RNG lowering)
    NON_TENSOR_RESULT = "non-tensor result"  # returns a Python value the program cannot produce
    NOT_TRACEABLE = "not traceable"          # PyTorch cannot trace the call with fake tensors
    NOT_LOWERABLE = "not lowerable"          # tracing or torch-mlir found no StableHLO form
    NOT_COMPILABLE = "not compilable"        # the compiler rejected the StableHLO

    @property
    def is_runtime_operation(self) -> bool:
        """A call the runtime itself performs, on a Trn host as here: never a missing lowering."""
        return self in (UnsupportedKind.VIEW, UnsupportedKind.RUNTIME_CHECK, UnsupportedKind.FACTORY)


class Unsupported(LoweringError):
    """This call has no single-op lowering (the op runs on the host path; unless its ``kind`` is a runtime
    operation or a random op, it counts as a fallback). ``why`` is the reason without the op name."""

    def __init__(self, op: str, kind: UnsupportedKind, why: str):
        super().__init__(f"{op}: {why}", op=op)
        self.kind = kind
        self.why = why


_LEGALIZE = re.compile(r"failed to legalize operation '([\w.]+)'")
_OPERATOR = re.compile(r'torch\.operator"\([^)]*\) <\{name = "([\w.]+)"')
_ERROR_LINE = re.compile(r"error: (.*)")


def summarize_mlir_error(text: str) -> tuple[str | None, str]:
    """(the torch-mlir op that failed, first error line) from a torch-mlir diagnostic dump."""
    op = None
    names = _LEGALIZE.findall(text) + _OPERATOR.findall(text)
    # prefer a real ATen op over the generic "torch.operator" or the constants feeding the op
    ranked = ([n for n in names if n.startswith("torch.aten.")]
              + [n for n in names if not n.startswith(("torch.constant", "torch.operator"))])
    if ranked:
        op = ranked[0]
    elif names:
        op = names[0]
    line = _ERROR_LINE.search(text)
    first = line.group(1).strip() if line else "unknown error"
    return op, first
