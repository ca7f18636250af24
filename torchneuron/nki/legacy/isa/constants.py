"""`neuronxcc.nki.isa.constants`: the ISA enumerations, importable on their own
(`from neuronxcc.nki.isa.constants import oob_mode`, as AWS's kernels do). Both API generations export the
same enums: the current module is the one list."""

from ...current.isa.constants import *  # noqa: F403
from ...current.isa.constants import __all__  # noqa: F401
