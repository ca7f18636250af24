"""The name `nki_ops.torch_ops` had before it said what it holds; docs/nki.md documented `nki_ops.ops`, so
code written against it keeps working. New code imports `nki_ops.torch_ops`."""

from .torch_ops import *  # noqa: F403  (registers torch.ops.nki_ops.*)
from .torch_ops import __all__  # noqa: F401
