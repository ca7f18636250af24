"""A user's first lines print no warnings they did not ask for: printing a neuron tensor (PyTorch formats it
through float64), random ops, generate(), and `python -m torchneuron demo`. Each runs in a fresh process
with Python's default warning filters, so a warning shows up on stderr exactly as a user would see it."""

import subprocess
import sys

import pytest

from tests.helpers import run_python


def _stderr_of(code: str, *env_pairs: tuple[str, str]) -> str:
    return run_python(code, timeout=600, flags=("-W", "default"), PYTHONWARNINGS=None, **dict(env_pairs)).stderr


def test_a_first_script_warns_only_about_the_users_float64():
    pytest.importorskip("transformers")
    err = _stderr_of("""
        import torch, transformers
        print(torch.randn(3, device="neuron"))          # PyTorch formats through float64: no notice
        print(torch.randn(2, 3, device="neuron") * 1e6, torch.tensor([1.5, float("nan")], device="neuron"))
        print(torch.randint(0, 10, (4,), device="neuron"), torch.rand(2, device="neuron"))
        print(torch.randn(3, device="neuron").to(torch.bfloat16))
        cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                       pad_token_id=0)
        model = transformers.LlamaForCausalLM(cfg).to("neuron").eval()
        ids = torch.tensor([[3, 4, 5]], device="neuron")
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False)
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=True, top_k=5)
        x = torch.ones(3, device="neuron", dtype=torch.float64)
        print((x * 2).sum())                            # line 15, the user's float64: the notice, once
    """, ("HF_HUB_OFFLINE", "1"))
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("<string>:15: UserWarning: neuron: aten::mul"), err
    assert "computes on float64" in lines[0]


def test_strict_mode_still_warns_about_unlowered_ops():
    err = _stderr_of("""
        import torch
        torch.nonzero(torch.tensor([0.0, 1.0], device="neuron"))
    """, ("TORCHNEURON_EAGER", "lowered"))
    assert "FallbackWarning" in err and "aten::nonzero" in err, err


def test_demo_runs_clean():
    proc = subprocess.run([sys.executable, "-W", "default", "-m", "torchneuron", "demo", "--steps", "20"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Warning" not in proc.stderr and "deprecated" not in proc.stderr, proc.stderr


def test_clipped_causes_end_at_a_word_with_an_ellipsis():
    from torchneuron.testing.opinfo_sweep import clip

    text = "shape-specialised graph per input shape (pad or bucket variable dimensions to bound recompiles)"
    assert clip(text, 200) == text
    short = clip(text, 60)
    assert len(short) <= 60 and short.endswith("…") and text.startswith(short[:-1])
    assert text[len(short) - 1] == " "  # cut before a word, never inside one
    assert clip("x" * 50, 20) == "x" * 19 + "…"  # no space to cut at: cut hard, still marked


def test_no_cause_in_the_op_table_is_cut_mid_word():
    """The causes FallbackWarning and docs/op_coverage.md show (the table once read "... bucket variable dime")."""
    from torchneuron.lowering import op_table

    causes = list(op_table.CAUSES.values())
    causes += [cause for per_dtype in op_table.OPINFO.values() for _, cause in per_dtype.values()]
    assert len(causes) > 100
    # the sweep clips at 200, 240 or 300 characters: a cause cut to exactly that length lost its end unmarked
    cut = [c[-40:] for c in causes if len(c) in (200, 240, 300) and not c.endswith("…")]
    assert cut == []
    assert sum(c.endswith("…") for c in causes) > 10  # clipped ones are there, marked
    assert not any(c.endswith("dime") for c in causes)
