"""torch.compile(backend="neuron") as installed: a fresh process, a second process (warm start), Hugging Face."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str, **env) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, **env}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_backend_works_after_install_without_importing_torchneuron():
    res = _run("""
        import json, sys, torch
        assert "torchneuron.dynamo" not in sys.modules  # nothing compile-related loads with torch
        f = torch.compile(lambda t: t.sin() * 2, backend="neuron")
        x = torch.randn(5, device="neuron")
        ok = torch.allclose(f(x).cpu(), x.cpu().sin() * 2, atol=1e-6)
        from torch._dynamo.device_interface import get_interface_for_device
        iface = get_interface_for_device("neuron")
        print(json.dumps({"ok": ok, "listed": "neuron" in torch._dynamo.list_backends(),
                          "devices": iface.device_count(), "current": iface.current_device()}))
    """)
    assert res == {"ok": True, "listed": True, "devices": torch.neuron.device_count(), "current": 0}


WARM = """
    import json, sys, torch
    from tests.training.models import GPT
    from torchneuron.compiler import driver
    torch.manual_seed(0)
    model = GPT().to("neuron")
    tokens = torch.randint(0, 64, (4, 17)).to("neuron")
    _, loss = torch.compile(model, backend="neuron")(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    m = torch.neuron.get_dynamo_metrics()
    print(json.dumps({"loss": loss.item(), "mlir": "torch_mlir" in sys.modules, "hits": m["cache_hits"],
                      "pieces": m["lowered_pieces"], "compiles": driver.default_cache().stats["compiles"]}))
"""


def test_second_process_compiles_nothing_and_skips_torch_mlir(tmp_path):
    cold = _run(WARM, TORCHNEURON_CACHE_DIR=str(tmp_path))
    warm = _run(WARM, TORCHNEURON_CACHE_DIR=str(tmp_path))
    assert cold["mlir"] and cold["compiles"] == cold["pieces"] == 2 and cold["hits"] == 0
    assert not warm["mlir"] and warm["compiles"] == 0 and warm["hits"] == warm["pieces"] == 2
    assert warm["loss"] == cold["loss"]


def test_hf_llama_static_cache_generate_auto_compiles_and_matches_cpu():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 128, (1, 6))
    expected = model.generate(ids, max_new_tokens=8, do_sample=False)
    got = model.to("neuron").generate(ids.to("neuron"), max_new_tokens=8, do_sample=False,
                                      cache_implementation="static")
    assert got.cpu().tolist() == expected.tolist()
    m = torch.neuron.get_dynamo_metrics()
    assert m["graphs_compiled"] >= 1 and m["eager_pieces"] == 0  # transformers compiled the decode step for neuron
