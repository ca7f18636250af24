import torch_neuronx  # noqa: I001  (first, as AWS's examples begin)

# AWS's llama example, as a TorchNeuron user writes it: a Llama causal LM (a tiny Hugging Face LlamaConfig,
# random weights, nothing downloaded) moved to device='neuron', one forward pass and greedy generate(), eagerly
# or with the model compiled by torch.compile(backend="neuron").
#
#     python llama.py [--device neuron|cpu] [--compile] [--dtype float32|bfloat16]
#
# Prints one JSON line: the logits' summary, the last position's logits, and the generated tokens.

import argparse
import json

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="neuron")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)

    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         rope_theta=10000.0, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    prompt = torch.tensor([[1, 17, 42, 99, 7, 64, 128, 3], [1, 5, 200, 33, 90, 12, 8, 77]], device=device)

    forward = torch.compile(model, backend="neuron") if args.compile else model
    with torch.no_grad():
        logits = forward(prompt).logits
        tokens = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12,
                                do_sample=False, pad_token_id=0)
    last = logits[:, -1].float().cpu()
    print(json.dumps({"example": "llama", "device": str(logits.device), "dtype": args.dtype,
                      "compiled": args.compile, "logits_shape": list(logits.shape),
                      "logits_abs_mean": logits.float().abs().mean().item(), "last_logits": last.tolist(),
                      "generated": tokens[:, prompt.shape[1]:].cpu().tolist(),
                      "fallback_ops": torch_neuronx.get_fallback_ops() if device.type == "neuron" else []}))


if __name__ == "__main__":
    main()
