"""How many BLAS threads a simulated matmul may use.

Kernels issue many small matmuls (128 x 128 x 512 is one instruction). OpenBLAS splits even those over all
cores, and its worker threads spin while they wait: on a machine whose cores are busy with other work, a
128^3 fp32 product measured 10.7 ms on two threads against 0.21 ms on one, and a K=1024 accumulation group
(67M multiply-accumulates) 23 ms against 3 ms. The simulator therefore runs its products on the calling
thread only, except large ones (a whole accumulation group) when the load average says cores are idle.

The setting is OpenBLAS's per-thread one (`openblas_set_num_threads_local`), so it never changes the thread
count the user's own NumPy code sees outside a kernel, and the two threads of an LNC=2 launch set it each for
themselves. The runner sets it once per kernel program (`launch_scope`) rather than per matmul: two foreign
calls cost more than a small product. Without that entry point (another BLAS, an older OpenBLAS) products
run as NumPy decides.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
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


class _Threads:
    """Sets this thread's OpenBLAS thread count for a block and restores it (a class, not a generator: it
    wraps kernel programs and matmuls)."""

    __slots__ = ("count", "previous")

    def __init__(self, count: int) -> None:
        self.count = count
        self.previous: int | None = None

    def __enter__(self) -> None:
        self.previous = _SETTER(self.count)  # type: ignore[misc]

    def __exit__(self, *exc: object) -> None:
        _SETTER(self.previous)  # type: ignore[misc]


_NULL = contextlib.nullcontext()
_local = threading.local()  # .outside: the thread count a `launch_scope` found (None: not in one)


class launch_scope:
    """``with launch_scope():`` around a kernel program: its products run on one thread without setting the
    count per matmul (two foreign calls each, more than a small product costs)."""

    __slots__ = ("previous", "outer")

    def __init__(self) -> None:
        self.previous: int | None = None
        self.outer: int | None = None

    def __enter__(self) -> None:
        if _SETTER is not None:
            self.outer = getattr(_local, "outside", None)
            self.previous = _SETTER(1)
            _local.outside = self.previous

    def __exit__(self, *exc: object) -> None:
        if _SETTER is not None:
            _SETTER(self.previous)
            _local.outside = self.outer


def single_thread(macs: int = 0) -> contextlib.AbstractContextManager[None]:
    """Run the enclosed products on the calling thread (see the module docstring), unless they are
    large and the machine has idle cores for OpenBLAS to use."""
    if _SETTER is None:
        return _NULL
    outside = getattr(_local, "outside", None)
    if macs >= _MANY_MACS and _cores_idle():
        # inside a launch scope: the count the thread had before it; else as NumPy decides
        return _NULL if outside is None else _Threads(outside)
    return _Threads(1) if outside is None else _NULL
