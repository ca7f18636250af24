"""How many BLAS threads a simulated matmul may use.

Kernels issue many small matmuls (128 x 128 x 512 is one instruction). OpenBLAS splits even those over all
cores, and its worker threads spin while they wait: on a machine whose cores are busy with other work, a
128^3 fp32 product measured 10.7 ms on two threads against 0.21 ms on one, and a K=1024 accumulation group
(67M multiply-accumulates) 23 ms against 3 ms. The simulator therefore runs its products on the calling
thread only, except large ones (a whole accumulation group) when no other process is using a core:
a K=8192 group (128 x 8192 x 512) measured 13.6 ms on one thread and 8.6 ms on two.

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
_TICK = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
# (when asked, the answer, machine-wide busy CPU seconds, this process's CPU seconds) at the last check
_idle: tuple[float, bool, float | None, float] = (0.0, False, None, 0.0)


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _machine_busy_seconds() -> float | None:
    """CPU seconds every process on the machine has run (Linux's /proc/stat); None where there is none."""
    try:
        with open("/proc/stat", "rb") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) * _TICK  # all but idle and iowait


def _cores_idle() -> bool:
    """Whether a core is free for a second BLAS thread, asked at most once a second: what other processes
    ran over the last second, the machine's busy time less this process's own CPU time, leaves a core
    and a half. The load average cannot say it: it lags by a minute and counts this process, whose own
    BLAS threads then switched the second thread off. Without /proc/stat: a 1-minute load average below the
    cores less one."""
    global _idle
    now = time.monotonic()
    last_at, spare, last_busy, last_own = _idle
    if now - last_at > 1.0:
        busy, own = _machine_busy_seconds(), time.process_time()
        if busy is None:
            try:
                spare = os.getloadavg()[0] < _usable_cores() - 1
            except OSError:
                spare = False
        else:
            others = (busy - last_busy - (own - last_own)) / (now - last_at) if last_busy is not None else None
            spare = others is not None and others < _usable_cores() - 1.5
        _idle = (now, spare, busy, own)
    return spare


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
