"""``torch.compile(model, backend="neuron")`` (see ``backend.py`` for the pipeline and ``docs/compile.md``).

Importing this package imports Dynamo (seconds): it is loaded only through the ``torch_dynamo_backends``
entry point, ``torchneuron.compile_options`` or ``torch.neuron.get_dynamo_metrics``.
"""

from __future__ import annotations

from .backend import neuron_backend
from .metrics import get_dynamo_metrics, reset_dynamo_metrics
from .options import compile_options

__all__ = ["neuron_backend", "get_dynamo_metrics", "reset_dynamo_metrics", "compile_options"]
