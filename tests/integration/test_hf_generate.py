"""generate() on neuron gives the CPU's tokens: greedy, and sampling with the same seed (the neuron
generator is seeded like the CPU's), for decoder-only and encoder-decoder models."""

import pytest
import torch

from .hf_models import MODELS, VOCAB

GENERATE = ["gpt2", "llama", "qwen2", "gemma3", "t5"]


def _prompt(name: str) -> dict[str, torch.Tensor]:
    ids = torch.randint(1, VOCAB, (2, 5), generator=torch.Generator().manual_seed(3))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _generate(model, inputs, device, **kwargs):
    model = model.to(device).eval()
    torch.manual_seed(7)
    with torch.no_grad():
        out = model.generate(**{k: v.to(device) for k, v in inputs.items()}, max_new_tokens=6,
                             pad_token_id=0, **kwargs)
    assert out.device.type == torch.device(device).type
    return out.cpu()


@pytest.mark.parametrize("name", GENERATE)
def test_greedy_and_sampled_generate_match_cpu(name):
    torch.manual_seed(0)
    model = MODELS[name]()
    inputs = _prompt(name)
    for kwargs in ({"do_sample": False}, {"do_sample": True, "top_k": 20, "temperature": 0.9}):
        expected = _generate(model, inputs, "cpu", **kwargs)
        got = _generate(model, inputs, "neuron", **kwargs)
        assert got.tolist() == expected.tolist(), kwargs
