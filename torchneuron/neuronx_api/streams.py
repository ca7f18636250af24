"""``torch_neuronx.streams``: ``Stream`` and ``Event``, the same classes as ``torch.neuron.Stream`` / ``Event``."""

from torchneuron.device.streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream

__all__ = ["Event", "Stream", "StreamContext", "current_stream", "default_stream", "set_stream", "stream"]
