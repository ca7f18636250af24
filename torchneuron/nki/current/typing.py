"""`nki.typing` for this front end (one implementation: torchneuron.nki.typing)."""

from ..typing import TensorType, mutable_tensor, scalar, tensor  # noqa: F401
