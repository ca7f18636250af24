"""`torchneuron.nki.isa`: the current (`nki.isa`, dst-first) surface, importable as a package (with
`torchneuron.nki.isa.constants`, like AWS's `nki.isa`)."""

from ..current.isa import *  # noqa: F403
from ..current.isa import constants  # noqa: F401
