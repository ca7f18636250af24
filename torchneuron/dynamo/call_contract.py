"""What ``torch.compile(..., backend="neuron")`` promises about its arguments: unsupported ``mode=`` and
``options=`` are said once, not silently ignored, and a function called on CPU tensors returns neuron tensors.

AWS's TorchNeuron documents that CPU inputs of a compiled function are moved to the device and the result is a
neuron tensor. Here the graph Dynamo traced on CPU tensors runs as traced (its CPU inputs, any in-place updates
of them, and its gradients stay exact) and its tensor results are handed back on ``neuron:<current>``; one
warning recommends passing neuron tensors, which avoids the copies.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

# the modes of torch.compile; none changes what this backend does (no CUDA-graph replay, no autotuning)
_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_said: set[str] = set()


def _once(key: str, message: str) -> None:
    if key not in _said:
        _said.add(key)
        warnings.warn(message, UserWarning, stacklevel=4)


def check_settings(kwargs: dict[str, Any]) -> None:
    """Warn once per unsupported ``mode=`` value and per set of ``options=`` keys."""
    mode = kwargs.get("mode")
    if mode:
        _once(f"mode={mode}", f"torch.compile(backend='neuron'): mode={mode!r} is ignored: neuron programs "
              "are whole-graph static programs already, with no replay (CUDA-graph) or autotuning mode; the "
              "default mode is used.")
    options = kwargs.get("options") or {}
    if options:
        keys = ", ".join(sorted(map(str, options)))
        _once(f"options={keys}", f"torch.compile(backend='neuron'): options={{{keys}}} are ignored (they are "
              "inductor's); set the neuron backend's options with torchneuron.compile_options(...).")
    unknown = sorted(set(kwargs) - {"mode", "options"})
    if unknown:
        _once(f"kwargs={unknown}", f"torch.compile(backend='neuron'): {', '.join(unknown)} ignored.")


def on_cpu_only(example_inputs: list) -> bool:
    """The graph's tensor inputs are all CPU tensors (there is at least one) and none is on neuron."""
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "cpu" for t in tensors)


def results_on_neuron(compiled: Callable) -> Callable:
    """``compiled`` whose CPU tensor results come back as neuron tensors (with their autograd history)."""
    _once("cpu-inputs", "torch.compile(backend='neuron') was called on CPU tensors: the results are returned "
          "as neuron tensors, as AWS's TorchNeuron documents; move the inputs and the model to 'neuron' "
          "(model.to('neuron'), x.to('neuron')) to compute on the device without the copies.")
    device = torch.device("neuron", torch.neuron.current_device())

    def to_neuron(t):
        return t.to(device) if isinstance(t, torch.Tensor) and t.device.type == "cpu" else t

    def run(*args):
        return pytree.tree_map(to_neuron, compiled(*args))

    # Dynamo calls the backend's result with a boxed list when it says so; keep the flag
    run._boxed_call = getattr(compiled, "_boxed_call", False)
    return run
