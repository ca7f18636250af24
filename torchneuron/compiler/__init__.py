"""The compiler driver: StableHLO text in, an executable out, cached in memory and on disk.

Two back ends behind one interface (`driver.compile`):

- ``xla-cpu`` (target ``"sim"``): jaxlib's XLA:CPU client; the executable runs on neuron device buffers
  through DLPack aliasing, with no copies.
- ``neuronx-cc`` (targets ``"trn1" | "trn2" | "trn3"``): AWS's compiler, run as a subprocess when it is on
  ``PATH``; produces a NEFF.

Importing this package is cheap: jaxlib is imported on the first compile.
"""

from __future__ import annotations

from .driver import CompileError, compile, default_cache

__all__ = ["CompileError", "compile", "default_cache"]
