"""The kernel library as torch custom ops (``torch.ops.nki_ops.*``): each op launches its NKI kernel on the
neuron device, has its backward registered (itself an NKI op), and a torch reference to check it against.

    import nki_ops.torch_ops as ops
    y = ops.rmsnorm(x, weight, eps=1e-6)          # x on the neuron device, any leading dims

Importing this module registers the ops; it needs torchneuron's device.
"""

from __future__ import annotations

from .adamw_ops import adamw_
from .attention_ops import causal_attention
from .linear_ops import linear, matmul
from .norm_ops import layernorm, rmsnorm
from .rotary_ops import rotary
from .softmax_ops import softmax

__all__ = ["adamw_", "causal_attention", "layernorm", "linear", "matmul", "rmsnorm", "rotary", "softmax"]
