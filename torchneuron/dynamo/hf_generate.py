"""Make Dynamo trace Hugging Face's sliding-window cache length as a symbolic int, not a constant.

On neuron, transformers' ``generate(..., cache_implementation="static")`` compiles the decode step with
``CompileConfig(backend="neuron", dynamic=False)``. Sliding-window models (Gemma2, Gemma3, Mistral-style
``sliding_window`` configs) keep a Python int per sliding layer, ``StaticSlidingWindowLayer.cumulative_length_int``,
which ``update`` increments every step. With ``dynamic=False`` Dynamo guards such an int by value, so every
decode step was a new Dynamo frame (a recompile, up to Dynamo's limit of 8, then eager).

``torch.compiler.config.dynamic_sources`` is the one setting that makes a source symbolic even under
``dynamic=False``; the pattern below names only that attribute. Dynamo then guards what transformers
branches on (``cache full`` or not): two frames for a whole generation. The int only feeds ``+= 1``, so
``host_scalars`` keeps it out of the program: one static program per frame.

Installed when the neuron backend is first looked up (``torch.compile(backend="neuron")`` imports it), so it
also applies to other backends compiling later in the same process: they see the same int as symbolic, which
only removes recompiles. It is added once per process: taking it out of
``torch.compiler.config.dynamic_sources`` afterwards restores Dynamo's by-value guard.
"""

from __future__ import annotations

import torch

PATTERN = r".*\.cumulative_length_int"


def install() -> None:
    entries = [e for e in torch.compiler.config.dynamic_sources.replace(" ", "").split(",") if e]
    if PATTERN not in entries:
        torch.compiler.config.dynamic_sources = ",".join([*entries, PATTERN])
