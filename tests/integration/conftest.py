"""Real libraries on neuron: Hugging Face models built from tiny configs (nothing is downloaded), torch.nn
RNNs, nested tensors. HF_HUB_OFFLINE makes any accidental download an error instead of a network wait."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
