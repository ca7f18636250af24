"""Neuron decompositions: gamma, error-function and related special functions torch-mlir has no StableHLO lowering for (filled in by issue 5's coverage work)."""

from __future__ import annotations

from collections.abc import Callable

import torch


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {}
