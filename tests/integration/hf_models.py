"""Tiny Hugging Face models, built from configs in the test (no weights, no downloads)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

VOCAB = 96


def _t():
    return pytest.importorskip("transformers")


def _decoder(config_cls: str, model_cls: str, **extra) -> Callable[[], torch.nn.Module]:
    def build():
        t = _t()
        cfg = getattr(t, config_cls)(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                     **extra)
        return getattr(t, model_cls)(cfg)
    return build


def gpt2():
    t = _t()
    return t.GPT2LMHeadModel(t.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                            bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1))


def bert():
    t = _t()
    return t.BertForMaskedLM(t.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                          num_attention_heads=4, intermediate_size=64, max_position_embeddings=64))


def t5():
    t = _t()
    return t.T5ForConditionalGeneration(t.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                                   num_heads=4, decoder_start_token_id=0, pad_token_id=0))


# name -> builder; "seq2seq" models take decoder inputs
MODELS: dict[str, Callable[[], torch.nn.Module]] = {
    "gpt2": gpt2,
    "llama": _decoder("LlamaConfig", "LlamaForCausalLM"),
    "mistral": _decoder("MistralConfig", "MistralForCausalLM", sliding_window=8),
    "qwen2": _decoder("Qwen2Config", "Qwen2ForCausalLM"),
    "gemma2": _decoder("Gemma2Config", "Gemma2ForCausalLM", head_dim=8, sliding_window=8),
    "gemma3": _decoder("Gemma3TextConfig", "Gemma3ForCausalLM", head_dim=8, sliding_window=8),
    "bert": bert,
    "t5": t5,
}
CAUSAL = ["gpt2", "llama", "mistral", "qwen2", "gemma2", "gemma3"]


def batch(name: str, seed: int = 0, length: int = 12) -> dict[str, torch.Tensor]:
    """Inputs and labels for one training step (a padded row for the masked models)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (2, length), generator=g)
    out = {"input_ids": ids, "labels": ids.clone()}
    if name == "t5":
        out["decoder_input_ids"] = torch.randint(1, VOCAB, (2, length // 2), generator=g)
        out["labels"] = out["decoder_input_ids"].clone()
    if name in ("bert", "t5", "llama"):
        mask = torch.ones_like(ids)
        mask[1, -3:] = 0
        out["attention_mask"] = mask
    return out


def to(d: dict[str, torch.Tensor], device: str | torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in d.items()}
