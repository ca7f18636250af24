"""One line on stderr when a process first compiles a model-sized graph for Neuron.

Hugging Face ``generate`` compiles by itself on neuron devices, and a cold compile (Dynamo, AOTAutograd,
lowering, the compiler) takes seconds before the first token, during which nothing else is printed. The
notice is a ``NeuronCompileNotice`` warning (filterable), given once per process, when the first graph with
at least ``MIN_OPS`` ops reaches the backend: a model's step, not a small function (those build in well
under a second and stay quiet). Graph size stands in for "slow" because it is known before the build, so
the line comes while the wait happens, deterministically.
"""

from __future__ import annotations

import warnings

import torch.fx as fx

MIN_OPS = 64
_given = False
_registry: dict = {}


class NeuronCompileNotice(UserWarning):
    """torch.compile(backend="neuron") is compiling a model for the first time in this process."""


def compiling(gm: fx.GraphModule) -> None:
    global _given
    if _given:
        return
    # Dynamo's graph (the backend's entry, before AOTAutograd) calls functions, methods and modules
    n_ops = sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
    if n_ops < MIN_OPS:
        return
    _given = True
    # warn_explicit at a location with no source line: Python's format then prints exactly one line
    warnings.warn_explicit(
        f"torch.compile(backend='neuron'): compiling a graph of {n_ops} ops into static-shape Neuron programs; "
        "the first steps of a model take seconds (later ones, and later processes through "
        "TORCHNEURON_CACHE_DIR, reuse them).", NeuronCompileNotice, "torchneuron", 0,
        module="torchneuron.dynamo.notice", registry=_registry)
