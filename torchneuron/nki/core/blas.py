"""How many BLAS threads a simulated matmul may use.

Kernels issue many small matmuls (128 x 128 x 512 is one instruction). OpenBLAS splits even those over all
cores, and its worker threads spin while they wait: on a machine whose cores are busy with other work, a
128^3 fp32 product measured 10.7 ms on two threads against 0.21 ms on one. The simulator therefore runs
products below `SINGLE_THREAD_MACS` multiply-accumulates on the calling thread only, and leaves large ones
(a whole K-accumulation group of a big matmul) to OpenBLAS's own choice.

The setting is OpenBLAS's per-thread one (`openblas_set_num_threads_local`), so it never changes the
thread count the user's own NumPy code sees, and the two threads of an LNC=2 launch set it each for
themselves. Without that entry point (another BLAS, an older OpenBLAS) products run as NumPy decides.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
from collections.abc import Iterator

import numpy as np

SINGLE_THREAD_MACS = 1 << 25  # ~33M multiply-accumulates: [128, 512] x 512 is 33.5M


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


@contextlib.contextmanager
def threads_for(macs: int) -> Iterator[None]:
    """Run the enclosed product single-threaded when it is small (see the module docstring)."""
    if _SETTER is None or macs >= SINGLE_THREAD_MACS:
        yield
        return
    previous = _SETTER(1)
    try:
        yield
    finally:
        _SETTER(previous)
