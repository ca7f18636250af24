"""``torch_neuronx.neuron_dynamo_backend``: the ``torch.compile`` backend and its metrics.

``torch.compile(model, backend="neuron")`` needs no import; scripts that pass the function itself
(``backend=neuron_backend``) or read the metrics from here get torchneuron's.
"""

from torchneuron.dynamo.backend import neuron_backend
from torchneuron.dynamo.metrics import get_dynamo_metrics, reset_dynamo_metrics

__all__ = ["get_dynamo_metrics", "neuron_backend", "reset_dynamo_metrics"]
