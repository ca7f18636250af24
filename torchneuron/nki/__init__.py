"""NKI on torchneuron: the kernel language (both API generations) and a NeuronCore simulator.

    from torchneuron import nki
    import torchneuron.nki.language as nl
    import torchneuron.nki.isa as nisa

    @nki.jit
    def add_kernel(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    nki.simulate(add_kernel)(x, y)          # NumPy arrays or torch CPU tensors
    nki.estimate(add_kernel, x, y)          # cost-model report: latency, engine busy time, bound

`torchneuron.nki` is the current (`nki` >= 0.3) front end; `torchneuron.nki.legacy` is `neuronxcc.nki`.
`install_import_aliases()` (or TORCHNEURON_NKI_ALIASES=1) lets unmodified kernels `import nki` /
`import neuronxcc.nki` when the real packages are not installed.
"""

from __future__ import annotations

from . import legacy, typing
from .aliases import install_import_aliases, uninstall_import_aliases
from .cost import CostReport
from . import isa, language
from .current import jit, simulate
from .errors import NkiError, NkiValidationError, NkiWarning
from .hardware import TARGETS, Target, current_target
from .kernel import Kernel, estimate
from .legacy import baremetal, benchmark, profile, simulate_kernel

__all__ = [
    "CostReport", "Kernel", "NkiError", "NkiValidationError", "NkiWarning", "TARGETS", "Target", "baremetal",
    "benchmark", "current_target", "estimate", "install_import_aliases", "isa", "jit", "language", "legacy",
    "profile", "simulate", "simulate_kernel", "typing", "uninstall_import_aliases",
]
