"""`torchneuron.nki.isa.constants`: the ISA enumerations."""

from ..current.isa.constants import *  # noqa: F403
from ..current.isa.constants import __all__  # noqa: F401
