"""Lowering errors: each names the op, the shapes and what to do about it."""

from __future__ import annotations

import re


class LoweringError(RuntimeError):
    """An op or graph cannot be lowered to StableHLO."""

    def __init__(self, message: str, op: str | None = None):
        super().__init__(message)
        self.op = op


class DynamicShapeError(LoweringError):
    """The graph has symbolic (dynamic) shapes; StableHLO for Neuron is static-shape."""


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
