"""How many BLAS threads a simulated matmul may use.

Kernels issue many small matmuls (128 x 128 x 512 is one instruction). OpenBLAS splits even those over all
cores, and its worker threads spin while they wait: on a machine whose cores are busy with other work, a
128^3 fp32 product measured 10.7 ms on two threads against 0.21 ms on one, and a K=1024 accumulation group
(67M multiply-accumulates) 23 ms against 3 ms. The simulator therefore runs its products on the calling
thread only; a kernel's products are many and small, so there is little to win from more threads even
on an idle machine, and a great deal to lose on a busy one.

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
def single_thread() -> Iterator[None]:
    """Run the enclosed products on the calling thread (see the module docstring)."""
    if _SETTER is None:
        yield
        return
    previous = _SETTER(1)
    try:
        yield
    finally:
        _SETTER(previous)
