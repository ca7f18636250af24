"""What the neuron device changes in the rest of the process, done at its first initialisation, never at
import: autoload imports torchneuron into every `import torch`, and a CPU- or CUDA-only program must run
exactly as it would without it.

- where a neuron backward runs (``_backward_thread``): on the initialising thread from then on;
- the exit hook that lets autograd's device threads finish before the interpreter does (``_autograd_exit``);
- on the sim runtime, nn.LSTM / nn.GRU as one host call each (``fused_rnn``);
- on the nrt runtime, an exit hook that finishes queued device work and calls ``nrt_close`` (which releases the
  NeuronCores) while the interpreter can still run the work's Python callbacks.

The CPU allocator that captures host-kernel outputs in device memory is registered by the first host kernel
(``csrc/aten/native/HostOutputAllocator.cpp``), and ``module.to("neuron")`` keeps Parameter identity through
a neuron kernel (``csrc/aten/native/ModuleConversion.h``): neither needs anything at import.
"""

from __future__ import annotations

import atexit

from torchneuron import _C
from torchneuron.device import _autograd_exit, _backward_thread
from torchneuron.device._lazy import _lazy_call


def _check_settings() -> None:
    # Checked at import (a mistyped value fails early); applied at first use.
    _backward_thread.mode()


def _on_first_initialisation() -> None:
    if _backward_thread.mode() == "caller":
        _backward_thread.backward_on_caller(True)
    runtime = _C._runtime_info()["runtime"]
    if runtime == "nrt":
        atexit.register(_C._nrt_close)  # registered first, so it runs after the autograd flush below
    else:
        from torchneuron.device import fused_rnn

        fused_rnn.install()  # nn.LSTM / nn.GRU as one host call (device memory is host memory here)
    _autograd_exit.install()


def defer_to_first_initialisation() -> None:
    _check_settings()
    _lazy_call(_on_first_initialisation)

