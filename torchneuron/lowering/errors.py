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
_ERROR_LINE = re.compile(r"error: (.*)")


def summarize_mlir_error(text: str) -> tuple[str | None, str]:
    """(the torch-mlir op that failed, first error line) from a torch-mlir diagnostic dump."""
    op = None
    m = _LEGALIZE.search(text)
    if m:
        op = m.group(1)
    line = _ERROR_LINE.search(text)
    first = line.group(1).strip() if line else "unknown error"
    return op, first
