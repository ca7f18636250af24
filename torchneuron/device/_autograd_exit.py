"""Interpreter exit after a neuron backward must not abort the process.

PyTorch's autograd engine runs a device's backward in its own thread, and every ``backward()`` stashes a
``contextvars`` context (a Python object) in the graph task's thread-local state. Whichever thread drops the
graph task last frees it; when that is the device thread and the interpreter is already finalising, its
attempt to take the GIL ends the thread by forced unwinding through C++ ``noexcept`` code:
"terminate called without an active exception" (one run in four for a script that ends right after
``loss.backward()`` here). At exit we therefore run one tiny backward per device through the engine directly
(no stash): each device thread has finished, and released, every earlier graph task before it pops ours.
The hook is registered at the first neuron device initialisation (``_first_use``), not at import.
"""

from __future__ import annotations

import atexit
import os


def _autograd_threads_started() -> bool:
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().startswith("pt_autograd_"):
                    return True
    except OSError:
        return True  # cannot tell: flushing is harmless
    return False


def flush_autograd_threads() -> None:
    from torchneuron import _C

    if not _C._is_initialized() or _C._is_in_bad_fork() or not _autograd_threads_started():
        return
    import torch
    from torch.autograd.variable import Variable

    for index in range(_C._device_count()):
        device = torch.device("neuron", index)
        leaf = torch.zeros((), device=device, requires_grad=True)
        out = leaf * 1.0  # a node on this device, so the engine hands it to the device thread
        Variable._execution_engine.run_backward((out,), (torch.ones((), device=device),), False, False,
                                                (), True, True)
    torch.neuron.synchronize()


def _at_exit() -> None:
    try:
        flush_autograd_threads()
    except Exception:  # noqa: BLE001 - exit must go on; the worst case is PyTorch's own race
        pass


_installed = False


def install() -> None:
    global _installed
    if not _installed:
        _installed = True
        atexit.register(_at_exit)
