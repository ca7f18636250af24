"""`torchneuron.nki.isa`: the current (`nki.isa`, dst-first) surface, importable as a submodule."""

from .current.isa import *  # noqa: F403
