"""Real-model paths on neuron vs CPU, measured in one run (JSON): times, so lower is better.

- lstm_train_step: a 2-layer LSTM language model training step (embedding, LSTM 64x64 over 32 steps, head,
  cross-entropy, Adam). On neuron ATen takes the fused-cell path (_thnn_fused_lstm_cell, csrc/aten/native/
  RnnCells.cpp) per time step; the CPU takes its unfused cell with the input projection precomputed
- gru_forward: a 2-layer GRU forward, inference
- encoder_padding_mask: nn.TransformerEncoder in eval with src_key_padding_mask (the nested-tensor fast path on
  both devices)
- hf_llama_train_step: a tiny Llama (transformers, config-built) forward + backward + AdamW

CPU and neuron are timed in alternation; each ratio is the median of per-repeat ratios (a shared 2-core VM
swings by a third between runs).
"""

from __future__ import annotations

import copy
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from _common import emit, paired_seconds, parser, sync_for  # noqa: E402
from torch import nn  # noqa: E402

import torchneuron  # noqa: E402, F401


class _LM(nn.Module):
    def __init__(self, vocab=256, d=64):
        super().__init__()
        self.emb, self.rnn, self.head = nn.Embedding(vocab, d), nn.LSTM(d, d, 2, batch_first=True), nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.rnn(self.emb(ids))[0])


def _train_step(model: nn.Module, device: str, make_loss):
    model = copy.deepcopy(model).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        make_loss(model, device).backward()
        opt.step()
    return step


def _lstm():
    torch.manual_seed(0)
    model = _LM()
    ids = torch.randint(0, 256, (8, 33))

    def loss(m, device):
        x = ids.to(device)
        return nn.functional.cross_entropy(m(x[:, :-1]).reshape(-1, 256), x[:, 1:].reshape(-1))
    return _train_step(model, "cpu", loss), _train_step(model, "neuron", loss)


def _gru():
    torch.manual_seed(0)
    gru = nn.GRU(64, 64, 2).eval()
    x = torch.randn(32, 8, 64)
    pairs = []
    for device in ("cpu", "neuron"):
        m, xd = copy.deepcopy(gru).to(device), x.to(device)

        def run(m=m, xd=xd):
            with torch.no_grad():
                m(xd)
        pairs.append(run)
    return pairs


def _encoder():
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2).eval()
    src = torch.randn(8, 32, 64)
    mask = torch.arange(32)[None, :] >= torch.tensor([32, 30, 24, 20, 16, 12, 8, 4])[:, None]
    pairs = []
    for device in ("cpu", "neuron"):
        m, s, k = copy.deepcopy(enc).to(device), src.to(device), mask.to(device)

        def run(m=m, s=s, k=k):
            with torch.no_grad():
                m(s, src_key_padding_mask=k)
        pairs.append(run)
    return pairs


def _llama():
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    ids = torch.randint(0, 256, (4, 32))
    return (_train_step(model, "cpu", lambda m, d: m(input_ids=ids.to(d), labels=ids.to(d)).loss),
            _train_step(model, "neuron", lambda m, d: m(input_ids=ids.to(d), labels=ids.to(d)).loss))


def main() -> None:
    args = parser(__doc__).parse_args()
    warnings.filterwarnings("ignore")
    result = {"note": "neuron/cpu time ratios measured in alternation in one run; lower is better"}
    cases = {"lstm_train_step": (_lstm, 3), "gru_forward": (_gru, 5), "encoder_padding_mask": (_encoder, 5)}
    try:
        import transformers  # noqa: F401
        cases["hf_llama_train_step"] = (_llama, 2)
    except ImportError:
        result["hf_llama_train_step"] = "skipped: transformers not installed"
    for name, (make, inner) in cases.items():
        cpu, neuron = make()
        cpu_s, neuron_s, ratio = paired_seconds(cpu, neuron, sync_for("neuron"), inner=inner, repeats=7)
        result[name] = {"cpu_ms": round(cpu_s * 1e3, 3), "neuron_ms": round(neuron_s * 1e3, 3),
                        "neuron_over_cpu": round(ratio, 3)}
    emit(result, args.out)


if __name__ == "__main__":
    main()
