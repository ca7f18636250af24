"""How many BLAS threads a simulated matmul may use.

Kernels issue many small matmuls (128 x 128 x 512 is one instruction). OpenBLAS splits even those over all
cores, and its worker threads spin while they wait: on a machine whose cores are busy with other work, a
128^3 fp32 product measured 10.7 ms on two threads against 0.21 ms on one, and a K=1024 accumulation group
(67M multiply-accumulates) 23 ms against 3 ms. The simulator therefore runs its products on the calling
thread only, except large ones (a whole accumulation group) when the load average says cores are idle.

The setting is OpenBLAS's per-thread one (`openblas_set_num_threads_local`), so it never changes the
thread count the user's own NumPy code sees, and the two threads of an LNC=2 launch set it each for
themselves. Without that entry point (another BLAS, an older OpenBLAS) products run as NumPy decides.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import time

import numpy as np


def _find_setter() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
            setter = lib.openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.argtypes = [ctypes.c_int]
        setter.restype = ctypes.c_int
        return setter
    return None


_SETTER = _find_setter()


_MANY_MACS = 1 << 25          # a product this large can use idle cores
_idle: tuple[float, bool] = (0.0, False)


def _cores_idle() -> bool:
    """Whether the machine has a spare core (load average below cores - 1); asked at most once a second."""
    global _idle
    now = time.monotonic()
    if now - _idle[0] > 1.0:
        try:
            spare = os.getloadavg()[0] < (os.cpu_count() or 1) - 1
        except OSError:
            spare = False
        _idle = (now, spare)
    return _idle[1]


class _SingleThread:
    """The context of `single_thread` (a class, not a generator: it wraps every simulated matmul)."""

    __slots__ = ("previous",)

    def __init__(self) -> None:
        self.previous: int | None = None

    def __enter__(self) -> None:
        self.previous = _SETTER(1)  # type: ignore[misc]

    def __exit__(self, *exc: object) -> None:
        _SETTER(self.previous)  # type: ignore[misc]


def single_thread(macs: int = 0) -> contextlib.AbstractContextManager[None]:
    """Run the enclosed products on the calling thread (see the module docstring), unless they are
    large and the machine has idle cores for OpenBLAS to use."""
    if _SETTER is None or (macs >= _MANY_MACS and _cores_idle()):
        return contextlib.nullcontext()
    return _SingleThread()
