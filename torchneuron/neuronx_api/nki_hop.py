"""``torch_neuronx.nki_hop``: ``nki_op`` and ``wrap_nki`` (torchneuron.custom_ops), where AWS's users import them."""

from torchneuron.custom_ops.op import nki_op
from torchneuron.custom_ops.wrap import wrap_nki

__all__ = ["nki_op", "wrap_nki"]
