"""Where a neuron backward runs: on the thread that calls ``backward()``, as a CPU backward does.

PyTorch's autograd engine gives every non-CPU device a thread of its own and hands that device's backward
nodes to it. On CUDA that thread only launches kernels. On the simulator the kernels are host kernels, so the
device thread would *compute* the backward, competing with the calling thread for the same cores: either
with its own OpenMP team (two teams on a 2-core host make libgomp throttle every parallel region) or
single-threaded (``TORCHNEURON_AUTOGRAD_THREADS=1``), which left the GPT-style training step at ~1.45x CPU.
Running the backward where the CPU's runs, with PyTorch's own intra-op threads, brings it to ~1.0x.

The switch is PyTorch's public one, ``torch.autograd.set_multithreading_enabled(False)`` (AOTAutograd and
inference mode flip the same thread-local flag). It is set at the first neuron device initialisation, for
the thread that initialises the device (normally the main thread, on its first neuron tensor), never at
import: a program that does not use neuron keeps PyTorch's autograd threads (CUDA users included). Other
threads keep PyTorch's default and their neuron backward runs in the device thread (correct, but with the
single-threaded kernels above) unless they call ``torchneuron.backward_on_caller()`` or use the context
manager themselves. ``TORCHNEURON_BACKWARD_THREAD=device`` keeps PyTorch's default.
"""

from __future__ import annotations

import torch

from torchneuron import _env


def backward_on_caller(enabled: bool = True) -> None:
    """Make ``backward()`` calls from this thread run neuron nodes on this thread (``False`` undoes it)."""
    torch._C._set_multithreading_enabled(not enabled)


def mode() -> str:
    """``caller`` or ``device`` (``TORCHNEURON_BACKWARD_THREAD``)."""
    value = _env.get(_env.BACKWARD_THREAD).strip().lower()
    if value not in ("caller", "device"):
        raise ValueError(f"{_env.BACKWARD_THREAD}={value!r}: expected 'caller' or 'device'")
    return value
