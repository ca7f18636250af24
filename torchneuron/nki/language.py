"""`torchneuron.nki.language`: the current (`nki.language`) surface, importable as a submodule."""

from .current.language import *  # noqa: F403
from .current.language import __all__  # noqa: F401
